"""The webhooks' serving side: one TLS server for admission reviews and conversions."""
