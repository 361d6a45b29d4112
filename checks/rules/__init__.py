"""The spec's checks 0-12 and the rows beyond it, one module each, numbered as the verdict shows them; they read
facts (checks.facts), never each other."""
