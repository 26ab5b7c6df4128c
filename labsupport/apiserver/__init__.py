"""labsupport.apiserver."""
