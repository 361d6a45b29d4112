"""The fake's REST routes, one module per area of the API."""
