"""labsupport.kind."""
