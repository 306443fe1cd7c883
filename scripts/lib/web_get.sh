# shellcheck shell=bash
# Sourced by scripts/demo.sh: a GET from prescient's loopback web server (the dashboard, /metrics) with
# bash alone, no curl.
# web_get HOST:PORT PATH: prints the body of a 200 answer. Anything else (no server, another status) is
# one line on stderr naming the URL and the status line or what failed, and exit 1: a caller under
# set -e stops there instead of showing an empty section.
# The Host header names the address asked: without an auth file the server answers only a Host that
# names a loopback address, and 403 to any other or none (DNS rebinding; engine/web/web_server.cpp).
web_get() {
  local address=$1 path=$2 response status
  local url="http://$address$path"
  if ! { exec 3<>"/dev/tcp/${address%:*}/${address##*:}"; } 2>/dev/null; then
    echo "web_get: cannot connect to $url" >&2
    return 1
  fi
  printf 'GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$path" "$address" >&3
  response=$(cat <&3)
  exec 3<&-
  status=${response%%$'\r'*}
  if [[ $status != HTTP/1.[01]\ 200\ * ]]; then
    echo "web_get: GET $url answered '${status:-nothing}': $(printf '%s' "${response#*$'\r\n\r\n'}" | head -c 200 | tr '\n' ' ')" >&2
    return 1
  fi
  printf '%s\n' "${response#*$'\r\n\r\n'}"
}
