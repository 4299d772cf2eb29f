#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes a development CA, a server certificate and a client certificate with openssl, for
# local TLS and mutual TLS (docs/security.md). Not for production: use your own CA or
# cert-manager there.
#
#   deploy/tls/make-dev-certs.sh OUT_DIR [SERVER_NAME...]
#
# OUT_DIR receives ca.crt ca.key server.crt server.key client.crt client.key (keys mode 600).
# The server certificate names localhost, 127.0.0.1 and ::1 plus every SERVER_NAME (a DNS
# name or an IP address). The client certificate's common name is $CLIENT_CN (default
# "dev-client"), which is the tenant under --tenant-from-cert. Validity: $DAYS (default 90).
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 OUT_DIR [SERVER_NAME...]" >&2
  exit 2
fi
out=$1
shift
client_cn=${CLIENT_CN:-dev-client}
days=${DAYS:-90}
mkdir -p "$out"
umask 077

san="DNS:localhost,IP:127.0.0.1,IP:::1"
for name in "$@"; do
  if printf '%s' "$name" | grep -Eq '^([0-9]{1,3}\.){3}[0-9]{1,3}$|:'; then
    san="$san,IP:$name"
  else
    san="$san,DNS:$name"
  fi
done

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# sign NAME CN EXTENSIONS: NAME.key and NAME.crt, signed by ca.key.
sign() {
  key "$out/$1.key"
  openssl req -new -key "$out/$1.key" -subj "/CN=$2" -out "$out/$1.csr"
  printf '%s\n' "$3" >"$out/$1.ext"
  openssl x509 -req -in "$out/$1.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
    -days "$days" -extfile "$out/$1.ext" -out "$out/$1.crt" 2>/dev/null
  rm -f "$out/$1.csr" "$out/$1.ext"
}

key "$out/ca.key"
openssl req -x509 -new -key "$out/ca.key" -subj "/CN=gcompute development CA" -days "$days" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$out/ca.crt"
sign server gcompute-server "subjectAltName=$san
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature"
sign client "$client_cn" "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature"
rm -f "$out/ca.srl"
chmod 644 "$out/ca.crt" "$out/server.crt" "$out/client.crt"
echo "wrote $out/{ca,server,client}.{crt,key} (server names: $san; client CN: $client_cn)"
