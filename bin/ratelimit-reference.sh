#!/bin/sh
# /bin/ratelimit in the image: envoyproxy/ratelimit's command, which reads only its environment and ignores any
# argument (Envoy AI Gateway's own manifests pass it one). So it serves, whatever the arguments, unless the
# first names a command of ours (serve, check, query, capacity, help, --version).
case "${1:-}" in
  serve | check | query | capacity | help | --help | -h | --version | version) ;;
  *)
    [ "$#" -gt 0 ] && echo "ratelimit: arguments ignored, as envoyproxy/ratelimit ignores them: $*" >&2
    set -- serve
    ;;
esac
exec node "${RATELIMIT_ENTRY:-/app/dist/cli.js}" "$@"
