"""A repository's merged history read from git, and the backtest over it."""
