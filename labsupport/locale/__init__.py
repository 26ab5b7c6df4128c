"""The catalogs of `labsupport.i18n`: one module per language, each a `MESSAGES` dict (English text → its own)."""
