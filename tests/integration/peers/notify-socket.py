#!/usr/bin/env python3
"""A stand-in for systemd's notification socket (sd_notify(3)).

    notify-socket.py PATH

Binds an AF_UNIX SOCK_DGRAM socket at PATH (node has no unix datagram
sockets), prints {"listening": PATH} once bound, then one JSON line per
datagram received: {"t_us": CLOCK_MONOTONIC in microseconds at arrival,
"msg": the datagram's text}. Runs until killed or stdin closes.
"""
import json
import os
import select
import socket
import sys
import time


def main():
    path = sys.argv[1]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    print(json.dumps({"listening": path}), flush=True)
    while True:
        # stdin closing (the test ended) ends the helper too.
        ready, _, _ = select.select([sock, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            break
        if sock in ready:
            data = sock.recv(65536)
            t_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
            print(json.dumps({"t_us": t_us, "msg": data.decode("utf-8", "replace")}), flush=True)
    sock.close()
    os.unlink(path)


if __name__ == "__main__":
    main()
