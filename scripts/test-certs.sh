#!/usr/bin/env bash
# Writes throwaway TLS files for tests into OUT_DIR: a CA (ca.pem), a server certificate for
# localhost and 127.0.0.1 (server.pem, server.key) and a client certificate (client.pem,
# client.key), both signed by that CA. Usage: bash scripts/test-certs.sh OUT_DIR
set -euo pipefail
out="${1:?usage: test-certs.sh OUT_DIR}"
mkdir -p "$out"
cd "$out"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -subj /CN=colocated-wire-test-ca -days 2 -out ca.pem \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
for who in server client; do
  key "$who.key"
  openssl req -new -key "$who.key" -subj "/CN=colocated-wire-test-$who" -out "$who.csr"
  usage=$([ "$who" = server ] && echo serverAuth || echo clientAuth)
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=%s\n' "$usage" > "$who.ext"
  openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$who.ext" -out "$who.pem" 2>/dev/null
done
rm -f ./*.csr ./*.ext ca.srl
