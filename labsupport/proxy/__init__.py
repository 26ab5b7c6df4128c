"""labsupport.proxy."""
