"""labsupport.apps."""
