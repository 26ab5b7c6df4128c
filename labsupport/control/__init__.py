"""labsupport.control."""
