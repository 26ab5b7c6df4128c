"""labsupport.dataplane."""
