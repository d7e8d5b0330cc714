"""jaxjudge's HTTP service: submit over HTTP, durable submissions, a bounded worker pool.

It builds on the grading layers (never the reverse): `jaxjudge.grade()` does the judging, this
package stores submissions, queues them and serves the results.
"""
