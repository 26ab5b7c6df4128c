"""The forkserver runs of `labsupport grade`, started and waited for from several threads at once."""
from __future__ import annotations

import concurrent.futures
import os

from labsupport.classroom.runner import call_in_child, warm_up


def test_children_ended_from_several_threads_keep_their_exit_codes():
    # Bare multiprocessing loses about one child in six here: a thread starting a child reads the exit code of
    # another thread's child that just ended, and that thread then finds the pipe empty and reports 255.
    warm_up()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        codes = list(pool.map(lambda _: call_in_child(os.getpid), range(400)))
    assert codes == [0] * 400
