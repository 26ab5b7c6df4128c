"""labsupport.model."""
