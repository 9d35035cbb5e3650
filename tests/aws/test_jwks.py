"""Bearer tokens behind the Function URL: verified like the HTTP API's JWT authorizer would."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from chatmemory.api.identity import InvalidToken
from chatmemory.aws.jwks import DISCOVERY_PATH, JwksVerifier, KeysUnavailable, fetch_json

ISSUER = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_TESTPOOL"
AUDIENCES = ("web-client", "mobile-client")
KID = "test-key-1"
# Where the discovery document says the keys are: not under the issuer (as with Okta,
# Entra ID or Keycloak), so a verifier that guessed the path would find nothing.
JWKS_URI = "https://keys.example.test/oauth2/v1/keys"


class Issuer:
    """An identity provider in miniature: its signing key, its JWKS, and the tokens it mints."""

    def __init__(self, *, names_itself: str = ISSUER) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.names_itself = names_itself
        self.fetched: list[str] = []

    @property
    def fetches(self) -> int:
        """How many times its key set was read."""
        return self.fetched.count(JWKS_URI)

    def fetch(self, url: str) -> dict[str, Any]:
        """What its two public documents answer; any other URL is not found."""
        self.fetched.append(url)
        if url == ISSUER + DISCOVERY_PATH:
            return {"issuer": self.names_itself, "jwks_uri": JWKS_URI}
        if url == JWKS_URI:
            return self.jwks()
        raise OSError(f"404 for {url}")

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def token(self, *, key: Any = None, kid: str = KID, **overrides: Any) -> str:
        return jwt.encode(
            claims(**overrides), key or self.key, algorithm="RS256", headers={"kid": kid}
        )

    def public_pem(self) -> bytes:
        return self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def claims(**overrides: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    values: dict[str, Any] = {
        "sub": "user-123",
        "iss": ISSUER,
        "aud": AUDIENCES[0],
        "iat": now,
        "exp": now + timedelta(minutes=5),
    }
    values.update(overrides)
    return {name: value for name, value in values.items() if value is not None}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_or_hmac_token(alg: str, payload: dict[str, Any], secret: bytes = b"") -> str:
    """A token PyJWT would refuse to mint: `none`, or HS256 keyed with a public key's PEM."""
    header = _b64(json.dumps({"alg": alg, "typ": "JWT", "kid": KID}).encode())
    body = _b64(json.dumps(payload, default=lambda d: int(d.timestamp())).encode())
    signing_input = f"{header}.{body}".encode()
    if alg == "none":
        return f"{header}.{body}."
    signature = hmac.new(secret, signing_input, hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"


@pytest.fixture
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def verifier(issuer: Issuer) -> JwksVerifier:
    return JwksVerifier(ISSUER, AUDIENCES, fetch=issuer.fetch)


def test_a_valid_token_gives_its_claims(issuer: Issuer, verifier: JwksVerifier) -> None:
    verified = verifier.verify(issuer.token())

    assert verified["sub"] == "user-123"
    assert verified["iss"] == ISSUER


def test_any_configured_audience_is_accepted(issuer: Issuer, verifier: JwksVerifier) -> None:
    assert verifier.verify(issuer.token(aud=AUDIENCES[1]))["sub"] == "user-123"
    assert verifier.verify(issuer.token(aud=["someone-else", AUDIENCES[1]]))["sub"] == "user-123"


def test_an_access_token_without_aud_is_checked_by_its_client_id(
    issuer: Issuer, verifier: JwksVerifier
) -> None:
    # Cognito access tokens carry client_id and no aud; API Gateway checks client_id then.
    assert verifier.verify(issuer.token(aud=None, client_id=AUDIENCES[0]))["sub"] == "user-123"
    with pytest.raises(InvalidToken):
        verifier.verify(issuer.token(aud=None, client_id="another-app"))
    with pytest.raises(InvalidToken):
        verifier.verify(issuer.token(aud=None))


def test_client_id_does_not_rescue_a_wrong_aud(issuer: Issuer, verifier: JwksVerifier) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify(issuer.token(aud="another-app", client_id=AUDIENCES[0]))


def test_the_keys_are_fetched_once_and_reused(issuer: Issuer, verifier: JwksVerifier) -> None:
    verifier.verify(issuer.token())
    verifier.verify(issuer.token(sub="user-456"))

    assert issuer.fetches == 1
    assert issuer.fetched.count(ISSUER + DISCOVERY_PATH) == 1


def test_the_keys_are_found_where_the_discovery_document_says(
    issuer: Issuer, verifier: JwksVerifier
) -> None:
    verifier.verify(issuer.token())

    # The discovery document first, then the key set it names (nothing guessed)
    assert issuer.fetched == [ISSUER + DISCOVERY_PATH, JWKS_URI]


def test_a_discovery_document_naming_another_issuer_is_not_trusted() -> None:
    # Given a discovery document served for someone else
    impostor = Issuer(names_itself="https://idp.attacker.example")
    verifier = JwksVerifier(ISSUER, AUDIENCES, fetch=impostor.fetch)

    # Then its keys are never read, and the token cannot be judged
    with pytest.raises(KeysUnavailable):
        verifier.verify(impostor.token())
    assert JWKS_URI not in impostor.fetched


def test_discovery_is_tried_again_after_a_failure(issuer: Issuer) -> None:
    # Given an issuer whose discovery document is down once
    failures = iter([OSError("timed out")])

    def flaky(url: str) -> dict[str, Any]:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return issuer.fetch(url)

    verifier = JwksVerifier(ISSUER, AUDIENCES, fetch=flaky)
    with pytest.raises(KeysUnavailable):
        verifier.verify(issuer.token())

    # Then the next request finds the keys
    assert verifier.verify(issuer.token())["sub"] == "user-123"


def _ec_issuer() -> tuple[Any, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))

    def fetch(url: str) -> dict[str, Any]:
        if url == ISSUER + DISCOVERY_PATH:
            return {"issuer": ISSUER, "jwks_uri": JWKS_URI}
        return {"keys": [{**public, "kid": KID, "alg": "ES256", "use": "sig"}]}

    return key, fetch


def test_an_es256_token_is_refused_by_default_like_the_http_api_authorizer_does() -> None:
    # Given an issuer key of a kind API Gateway's JWT authorizer does not accept (it takes RSA)
    key, fetch = _ec_issuer()
    verifier = JwksVerifier(ISSUER, AUDIENCES, fetch=fetch)

    # When one of its tokens is verified
    token = jwt.encode(claims(), key, algorithm="ES256", headers={"kid": KID})

    # Then it is refused here too: both entry points follow the same rules
    with pytest.raises(InvalidToken):
        verifier.verify(token)


def test_an_es256_token_is_verified_where_es256_is_allowed() -> None:
    # Given a deployment whose issuer signs with ES256 and allows it
    key, fetch = _ec_issuer()
    verifier = JwksVerifier(ISSUER, AUDIENCES, algorithms=("ES256",), fetch=fetch)
    token = jwt.encode(claims(), key, algorithm="ES256", headers={"kid": KID})

    assert verifier.verify(token)["sub"] == "user-123"
    # And a token re-signed under a symmetric algorithm still never gets in
    with pytest.raises(InvalidToken):
        verifier.verify(unsigned_or_hmac_token("HS256", claims(), secret=b"k"))


@pytest.mark.parametrize("algorithms", [(), ("HS256",), ("none",), ("RS256", "HS512")])
def test_only_asymmetric_algorithms_may_be_allowed(algorithms: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        JwksVerifier(ISSUER, AUDIENCES, algorithms=algorithms)


@pytest.mark.parametrize(
    "overrides",
    [
        # Times as offsets from when the test runs (parameters are built at collection,
        # which on a busy machine may be many minutes earlier).
        {"exp": -timedelta(minutes=5)},
        {"exp": None},
        {"iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_OTHERPOOL"},
        {"iss": None},
        {"aud": "another-app"},
        {"aud": None},
        {"sub": None},
        {"sub": ""},
        {"nbf": timedelta(minutes=5)},
    ],
    ids=[
        "expired",
        "no expiry",
        "wrong issuer",
        "no issuer",
        "wrong audience",
        "no audience",
        "no subject",
        "empty subject",
        "not yet valid",
    ],
)
def test_a_token_with_bad_claims_is_rejected(
    issuer: Issuer, verifier: JwksVerifier, overrides: dict[str, Any]
) -> None:
    now = datetime.now(UTC)
    claims_now = {
        name: now + value if isinstance(value, timedelta) else value
        for name, value in overrides.items()
    }
    with pytest.raises(InvalidToken):
        verifier.verify(issuer.token(**claims_now))


def test_a_token_expired_within_the_leeway_is_still_accepted(
    issuer: Issuer, verifier: JwksVerifier
) -> None:
    # Clocks drift; the default leeway is 30 s.
    token = issuer.token(exp=datetime.now(UTC) - timedelta(seconds=10))

    assert verifier.verify(token)["sub"] == "user-123"


def test_a_token_signed_by_another_key_is_rejected(issuer: Issuer, verifier: JwksVerifier) -> None:
    # Given a token that names the issuer's key id but was signed by someone else's key
    impostor = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    with pytest.raises(InvalidToken):
        verifier.verify(issuer.token(key=impostor))


def test_a_token_naming_an_unknown_key_is_rejected(issuer: Issuer, verifier: JwksVerifier) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify(issuer.token(kid="not-a-published-key"))


def test_a_tampered_token_is_rejected(issuer: Issuer, verifier: JwksVerifier) -> None:
    # Given a valid token whose payload is swapped for another user's
    header, _, signature = issuer.token().split(".")
    forged_body = _b64(json.dumps(claims(sub="someone-else"), default=str).encode())

    with pytest.raises(InvalidToken):
        verifier.verify(f"{header}.{forged_body}.{signature}")


def test_an_unsigned_token_is_rejected(verifier: JwksVerifier) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify(unsigned_or_hmac_token("none", claims()))


def test_an_hs256_token_keyed_with_the_public_key_is_rejected(
    issuer: Issuer, verifier: JwksVerifier
) -> None:
    # The classic algorithm confusion: HMAC "signed" with the issuer's public key.
    token = unsigned_or_hmac_token("HS256", claims(), secret=issuer.public_pem())

    with pytest.raises(InvalidToken):
        verifier.verify(token)
    assert issuer.fetches == 0  # refused before any key was looked up


@pytest.mark.parametrize("token", ["", "not-a-jwt", "a.b.c"])
def test_a_malformed_token_is_rejected(verifier: JwksVerifier, token: str) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify(token)


def test_keys_that_cannot_be_fetched_are_not_the_tokens_fault(issuer: Issuer) -> None:
    # Given an issuer whose JWKS endpoint is down
    def unreachable(url: str) -> dict[str, Any]:
        raise OSError("connection refused")

    verifier = JwksVerifier(ISSUER, AUDIENCES, fetch=unreachable)

    # Then a token cannot be judged: the caller hears "unavailable", not "invalid"
    with pytest.raises(KeysUnavailable):
        verifier.verify(issuer.token())


def test_discovery_starts_at_the_issuers_well_known_path() -> None:
    verifier = JwksVerifier(ISSUER + "/", AUDIENCES)

    assert verifier.discovery_url == ISSUER + "/.well-known/openid-configuration"


@pytest.mark.parametrize("url", ["http://keys.example.test/jwks", "file:///etc/passwd"])
def test_only_https_documents_are_ever_fetched(url: str) -> None:
    with pytest.raises(ValueError):
        fetch_json(url)


def test_a_verifier_needs_an_issuer_and_an_audience() -> None:
    with pytest.raises(ValueError):
        JwksVerifier(ISSUER, [])
    with pytest.raises(ValueError):
        JwksVerifier("", AUDIENCES)
