"""What the whole machine was busy with, for the benchmarks that must tell
their own CPU time from another process's (a shared 2-vCPU VM)."""
import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def machine_busy_s():
    """CPU seconds the whole machine spent not idle (all CPUs), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


def foreign_share(busy_s, own_s, elapsed_s):
    """The machine's busy time that was not ours, as a share of all its CPUs."""
    return max(0.0, busy_s - own_s) / (elapsed_s * NCPU) if elapsed_s > 0 else 0.0
