"""Worker processes and what runs in them: the fork server (processes), a job in a fresh process
(isolation), a worker kept warm between jobs (warm), the descent loop's runner, shared tensors,
memory limits, thread counts and the fork server's warm-up. The numerics below never import this
package.
"""
