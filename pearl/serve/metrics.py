"""The service's Prometheus metrics (GET /metrics), in a registry of the app's own, so that two apps in
one process (the tests) count apart."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# a request is one short name to a few thousand texts: milliseconds to tens of seconds on 2 cores
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_TEXTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


class ServeMetrics:
    def __init__(self, queued_texts, queued_candidates):
        """`queued_texts`, `queued_candidates`: callables giving the texts, and /link's candidates, waiting for or in
        a model call now."""
        self.registry = CollectorRegistry()
        self.requests = Counter("pearl_requests", "HTTP requests answered, by route and status",
                                ("route", "status"), registry=self.registry)
        self.latency = Histogram("pearl_request_seconds", "Time from a request's arrival to its answer's last byte",
                                 ("route",), buckets=_SECONDS, registry=self.registry)
        self.batch_texts = Histogram("pearl_batch_texts", "Texts per model call, over the requests batched together",
                                     ("endpoint",), buckets=_TEXTS, registry=self.registry)
        self.queue = Gauge("pearl_queued_texts", "Texts waiting for or in a model call", registry=self.registry)
        self.queue.set_function(queued_texts)
        self.candidates = Gauge("pearl_queued_candidates", "/link candidates (mentions × k) waiting for or in a model call",
                                registry=self.registry)
        self.candidates.set_function(queued_candidates)
        self.refused = Counter("pearl_queue_full", "Requests refused with 429 because the queue was full",
                               registry=self.registry)

    def observe(self, route: str, status: int, seconds: float) -> None:
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)
