#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Certificates for the TLS tests, made fresh by each test run (nothing is committed):
#   DIR/ca.crt server.* client.*      deploy/tls/make-dev-certs.sh (client CN "tenant-a")
#   DIR/client-b.*                    another client of the same CA (CN "tenant-b")
#   DIR/expired.*                     a client of the same CA that expired in 2020
#   DIR/uri-1.* uri-2.* uri-both.*    clients of the same CA, all with CN "shared", whose URI
#                                     SANs are spiffe://gcompute.test/tenant/tenant-u1, -u2,
#                                     and both
#   DIR/other/ca.crt server.* client.*  a second, unrelated CA and its server and client
set -eu
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
make=$here/../../deploy/tls/make-dev-certs.sh
CLIENT_CN=tenant-a "$make" "$dir" >/dev/null
CLIENT_CN=intruder "$make" "$dir/other" >/dev/null

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/client-b.key" 2>/dev/null
openssl req -new -key "$dir/client-b.key" -subj "/CN=tenant-b" -out "$dir/client-b.csr"
printf 'extendedKeyUsage=clientAuth\n' >"$dir/client.ext"
openssl x509 -req -in "$dir/client-b.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
  -CAcreateserial -days 30 -extfile "$dir/client.ext" -out "$dir/client-b.crt" 2>/dev/null

# client_with_sans NAME SAN-LIST: a client of DIR's CA with CN "shared" and these SANs.
client_with_sans() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/$1.key" 2>/dev/null
  openssl req -new -key "$dir/$1.key" -subj "/CN=shared" -out "$dir/$1.csr"
  printf 'extendedKeyUsage=clientAuth\nsubjectAltName=%s\n' "$2" >"$dir/$1.ext"
  openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 30 -extfile "$dir/$1.ext" -out "$dir/$1.crt" 2>/dev/null
  rm -f "$dir/$1.ext"
}
spiffe=spiffe://gcompute.test/tenant
client_with_sans uri-1 "URI:$spiffe/tenant-u1,DNS:ignored.example"
client_with_sans uri-2 "URI:$spiffe/tenant-u2"
client_with_sans uri-both "URI:$spiffe/tenant-u1,URI:$spiffe/tenant-u2"

# `openssl ca` is the one openssl 3.0 command that signs with explicit past dates.
ca=$dir/expired-ca
mkdir -p "$ca"
: >"$ca/index.txt"
cat >"$ca/ca.cnf" <<CNF
[ca]
default_ca = expired
[expired]
database = $ca/index.txt
new_certs_dir = $ca
serial = $ca/serial
default_md = sha256
policy = any
x509_extensions = client
[any]
commonName = supplied
[client]
extendedKeyUsage = clientAuth
CNF
echo 01 >"$ca/serial"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/expired.key" 2>/dev/null
openssl req -new -key "$dir/expired.key" -subj "/CN=tenant-a" -out "$dir/expired.csr"
openssl ca -batch -config "$ca/ca.cnf" -cert "$dir/ca.crt" -keyfile "$dir/ca.key" \
  -startdate 20200101000000Z -enddate 20200102000000Z -in "$dir/expired.csr" \
  -out "$dir/expired.crt" 2>/dev/null
rm -rf "$ca" "$dir"/*.csr "$dir/client.ext" "$dir/ca.srl"
