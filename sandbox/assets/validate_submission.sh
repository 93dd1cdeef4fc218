#!/bin/sh
# Check a submission file with the validation endpoint (valid or invalid, never a score).
#
#   /home/validate_submission.sh [FILE]     FILE defaults to $SUBMISSION_DIR/submission.csv
#
# The endpoint is served by the host over the Unix socket /home/validate.sock, so it works
# without network access; `curl --unix-socket /home/validate.sock -F file=@FILE
# http://localhost/validate` does the same. Exit status: 0 valid, 1 invalid, 2 not checked
# (no answer, or the endpoint refused the request: file over the size limit, another
# validation running, time bound reached). Every call is recorded by the host.
exec python3 - "${1:-${SUBMISSION_DIR:-/home/submission}/submission.csv}" "${VALIDATE_SOCKET:-/home/validate.sock}" <<'PY'
import http.client, json, os, socket, sys

path, sock_path = sys.argv[1], sys.argv[2]


class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(300)
        self.sock.connect(sock_path)


try:
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        conn = Conn("localhost")
        conn.request("POST", "/validate", body=handle,
                     headers={"Content-Type": "text/csv", "Content-Length": str(size)})
        response = conn.getresponse()
        status = response.status
        reply = json.loads(response.read() or b"{}")
except (OSError, ValueError) as exc:
    print(f"validation endpoint not reachable or file unreadable: {exc}", file=sys.stderr)
    sys.exit(2)
print(json.dumps(reply))
if status != 200:
    sys.exit(2)
sys.exit(0 if reply.get("valid") else 1)
PY
