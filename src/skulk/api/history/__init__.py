"""The last hour of what operators watch, kept in every node: a bounded ring of samples
(every `SAMPLE_INTERVAL_SECONDS`) per node and per instance, and markers from the event
log (failovers, evictions, placements, joins and leaves). `GET /v1/history` serves it
cluster-wide through any node."""
