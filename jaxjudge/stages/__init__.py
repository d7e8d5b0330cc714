"""The code that runs inside the sandbox: stage A (trace and export, beside user code), stage B
(execute the exported program) and the pool's zygote. Each file is run by path as a script with
only the standard library, jax and numpy; no trusted module imports them (a contract test)."""
