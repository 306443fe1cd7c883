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

free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 30000))
    port_in_use "$port" || { echo "$port"; return; }
  done
  die "no free loopback port found"
}
