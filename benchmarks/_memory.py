"""Memory figures of this process, for the benchmarks that measure it in a child process (Linux only)."""


def status_mib(field: str) -> float:
    """A /proc/self/status field in MiB: VmRSS (resident now) or VmHWM (the resident high-water mark)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")
