"""Who may take over a job at once: a dead process of this PID space, never a live one or one elsewhere."""

from __future__ import annotations

import socket
import subprocess
import sys

from waypost.server.jobs import _pid_space, dead_here, process_owner


def test_only_a_dead_process_of_this_pid_space_counts_as_dead() -> None:
    host, space = socket.gethostname(), _pid_space()
    assert space  # Linux: the boot id and the PID namespace are readable
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    assert gone.wait() == 0
    assert dead_here(f"{host}/{gone.pid}/n/{space}")
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not dead_here(f"{host}/{alive.pid}/n/{space}")
    finally:
        alive.kill()
        alive.wait()
    assert not dead_here(process_owner())  # this process
    assert not dead_here(f"{host}/{gone.pid}/n/another-space")  # a container sharing the host name
    assert not dead_here(f"elsewhere/{gone.pid}/n/{space}")
    assert not dead_here(f"{host}/{gone.pid}/n")  # an owner name without its PID space
