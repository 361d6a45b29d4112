"""Shared readings of a pull request's files and conversation, computed for the rules; a fact never imports a rule."""
