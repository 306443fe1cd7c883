# Sourced by the scripts that run a server of their own on this machine (pg.sh, pgbouncer.sh): run it as
# the unprivileged user `postgres` when root (PostgreSQL and PgBouncer refuse root), and find it a free
# loopback port. The sourcing script defines die.
run_user=postgres

# From / so the server user never starts in a directory it may not enter.
as_owner() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u "$run_user" -- "$@"); else "$@"; fi
}

# Creates DIR (if missing) for the server user: owned by it when root, reachable through its parents.
make_owned_dir() {
  local target=$1
  mkdir -p "$target"
  if [ "$(id -u)" = 0 ]; then
    id "$run_user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$run_user"
    chown -R "$run_user" "$target"
    local dir=$target
    while dir=$(dirname "$dir") && [ "$dir" != / ]; do
      runuser -u "$run_user" -- test -x "$dir" || chmod o+x "$dir"
    done
  fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A port nobody listens on, below the kernel's range of ephemeral ports (32768 up, by default): a port in
# that range may be held by an outgoing connection, which a connect does not see, and the server's bind
# would then fail. Free when looked at; the callers retry on another if it is taken before they bind.
free_port() {
  local port low=20000 high=32768 _
  read -r high _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  [[ "$high" =~ ^[0-9]+$ ]] && [ "$high" -ge $((low + 2000)) ] || high=50000
  for _ in $(seq 1 200); do
    port=$((low + RANDOM % (high - low)))
    port_in_use "$port" || { echo "$port"; return; }
  done
  die "no free loopback port found"
}
