"""GitHub over HTTP: the client and its caching and backoff, gathering a snapshot, publishing a verdict."""
