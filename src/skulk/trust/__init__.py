"""Who belongs to a cluster: its certificate authority, node certificates, join tokens,
and the signatures every cluster message carries."""
