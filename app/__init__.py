"""jaxjudge's HTTP service: submit over HTTP, durable submissions, a bounded worker pool.

`app` builds on the `grader` library (never the reverse): `grader.grade()` does the judging,
this package stores submissions, queues them and serves the results.
"""
