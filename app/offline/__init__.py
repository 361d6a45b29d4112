"""World fixtures read without HTTP, and replay against the fake GitHub."""
