"""Makes a JWK Set and tokens for the gateway's JWT tests (PyJWT and cryptography, which the
official MCP SDK's environment holds).

usage: jwt_tokens.py WORK_DIR ISSUER AUDIENCE

Writes WORK_DIR/jwks.json (an Ed25519 key `k1` and an RSA key `k2`) and WORK_DIR/tokens.json:
good ones for alice (group ops, by k1) and bob (group dev, by k2), alice's ending in 5 s and
alice's ended 10 s ago (within the default leeway), and bad ones, each refused
for one reason.
"""

import base64
import json
import sys
import time
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

work, issuer, audience = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
ed_key, rsa_key = ed25519.Ed25519PrivateKey.generate(), rsa.generate_private_key(65537, 2048)
stranger = ed25519.Ed25519PrivateKey.generate()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


ed_public = ed_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
rsa_numbers = rsa_key.public_key().public_numbers()
jwks = {"keys": [
    {"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": b64(ed_public)},
    {"kty": "RSA", "kid": "k2", "alg": "RS256",
     "n": b64(rsa_numbers.n.to_bytes((rsa_numbers.n.bit_length() + 7) // 8, "big")),
     "e": b64(rsa_numbers.e.to_bytes(3, "big"))},
]}
(work / "jwks.json").write_text(json.dumps(jwks))

now = int(time.time())


def claims(sub: str, groups: list[str], **changes) -> dict:
    return {"sub": sub, "groups": groups, "iss": issuer, "aud": audience, "exp": now + 600, **changes}


def ed(payload: dict, kid: str = "k1", key=ed_key) -> str:
    return jwt.encode(payload, key, algorithm="EdDSA", headers={"kid": kid})


good_alice = ed(claims("alice", ["ops"]))
header, payload, signature = good_alice.split(".")
forged_payload = b64(json.dumps(claims("alice", ["ops", "admins"])).encode())
tokens = {
    "alice": good_alice,
    "bob": jwt.encode(claims("bob", ["dev"]), rsa_key, algorithm="RS256", headers={"kid": "k2"}),
    # For the page: a session never outlives its token.
    "alice_short": ed(claims("alice", ["ops"], exp=now + 5)),
    "alice_in_leeway": ed(claims("alice", ["ops"], exp=now - 10)),
    "bad": {
        "expired": ed(claims("alice", ["ops"], exp=now - 3600)),
        "wrong issuer": ed(claims("alice", ["ops"], iss="https://evil.example")),
        "wrong audience": ed(claims("alice", ["ops"], aud="someone-else")),
        "no expiry": ed({k: v for k, v in claims("alice", ["ops"]).items() if k != "exp"}),
        "no subject": ed({k: v for k, v in claims("alice", ["ops"]).items() if k != "sub"}),
        "signed by a key not in the set": ed(claims("alice", ["ops"]), key=stranger),
        "an unknown kid": ed(claims("alice", ["ops"]), kid="k9"),
        "alg none": b64(json.dumps({"alg": "none", "kid": "k1"}).encode()) + "." + b64(
            json.dumps(claims("alice", ["ops"])).encode()) + ".",
        "HS256 keyed with the public key": jwt.encode(
            claims("alice", ["ops"]), ed_public, algorithm="HS256", headers={"kid": "k1"}),
        "RS256 claimed for the Ed25519 key": jwt.encode(
            claims("alice", ["ops"]), rsa_key, algorithm="RS256", headers={"kid": "k1"}),
        "the payload altered after signing": f"{header}.{forged_payload}.{signature}",
        "groups not strings": ed(claims("alice", [1, 2])),
        # Names a person reads as other names: zero-width, bidi override, BOM, a control.
        "a zero-width space in the subject": ed(claims("alice\u200b", ["ops"])),
        "a bidi override in the subject": ed(claims("\u202eecila", ["ops"])),
        "a BOM in the subject": ed(claims("\ufeffalice", ["ops"])),
        "a control in the subject": ed(claims("alice\u0007", ["ops"])),
        "a zero-width joiner in a group": ed(claims("alice", ["op\u200ds"])),
        "a bidi isolate in a group": ed(claims("alice", ["\u2066ops"])),
        "an empty group": ed(claims("alice", [""])),
    },
}
(work / "tokens.json").write_text(json.dumps(tokens))
