#!/usr/bin/python3
"""Forwards TCP connections, as a Kubernetes service's proxy does, then runs
a command.

Usage: tcp_forward.py LISTEN_HOST:PORT TARGET_HOST:PORT -- COMMAND...

Listens on LISTEN_HOST:PORT and copies the bytes of each connection to a
new connection to TARGET_HOST:PORT and back, while COMMAND runs; exits with
COMMAND's status. So LISTEN_HOST:PORT reaches the target without being an
address of the target's machine (a ClusterIP in front of a pod).
"""
import socket
import subprocess
import sys
import threading


def address(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    for end in (source, sink):
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(listener, target):
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(target)
        except OSError:
            client.close()
            continue
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(source, sink), daemon=True).start()


def main():
    listen, target = address(sys.argv[1]), address(sys.argv[2])
    command = sys.argv[4:] if sys.argv[3:4] == ["--"] else sys.argv[3:]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(listen)
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, target), daemon=True).start()
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
