"""labsupport.widgets."""
