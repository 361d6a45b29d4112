"""The webhook edge: bodies bounded, signatures checked, deliveries routed and group-committed."""
