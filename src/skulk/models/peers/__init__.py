"""Weights from peers: a node serves the verified files of its store to cluster members
over mutually authenticated TLS with HTTP range requests, and a fetching rank downloads
them from the nearest holder, resuming and verifying sha256, before it asks the hub."""
