"""Loopback forwarder run inside the sandbox when the network policy is an allow-list.

It listens on 127.0.0.1:PORT inside the sandbox's own network namespace (which has no other
interface) and relays each connection to the host's filtering proxy over the Unix socket
bound into the sandbox. ``HTTP_PROXY``/``HTTPS_PROXY`` point at it. It binds before the parent
returns, so the agent starts only once the proxy is reachable.

    python3 forward.py PORT SOCKET
"""

import os
import select
import socket
import sys
import threading


def relay(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    pair = {client: upstream, upstream: client}
    try:
        while True:
            readable, _, _ = select.select(list(pair), [], [], 600)
            if not readable:
                return
            for sock in readable:
                data = sock.recv(65536)
                if not data:
                    return
                pair[sock].sendall(data)
    except OSError:
        return
    finally:
        client.close()
        upstream.close()


def main() -> None:
    port, socket_path = int(sys.argv[1]), sys.argv[2]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    child = os.fork()
    if child:
        os.write(1, f"{child}\n".encode())  # the daemon's pid, for the sandbox's init
        os._exit(0)  # the parent returns once the port is bound
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, socket_path), daemon=True).start()


if __name__ == "__main__":
    main()
