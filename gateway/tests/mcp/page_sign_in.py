"""Signs a person in to the gateway's approval page through its OpenID provider, as a browser
would, and tries what an attacker would: the callback without this browser's state cookie, the
same callback twice.

    python page_sign_in.py ADMIN_BASE LOGIN_HINT API_KEY

Prints one JSON object of what each step answered (status codes, the session's approver)."""

import json
import sys
from urllib.parse import parse_qs, urlencode, urljoin, urlparse, urlunparse

import httpx2

admin, login_hint, api_key = sys.argv[1], sys.argv[2], sys.argv[3]
seen = {}
with httpx2.Client(follow_redirects=False, timeout=30) as gateway:
    seen["ways"] = gateway.get(f"{admin}/approvals/api/sign-in").json()
    started = gateway.get(f"{admin}/approvals/oauth/start")
    seen["start"] = started.status_code
    state_cookie = started.cookies.get("toolgate_oauth_state")
    seen["state_cookie_set"] = state_cookie is not None
    set_cookie = started.headers.get("set-cookie", "")
    seen["state_cookie_attributes"] = [a.strip() for a in set_cookie.split(";")[1:]]
    url = started.headers["location"]
    parts = urlparse(url)
    query = parse_qs(parts.query)
    seen["asked"] = {k: query[k][0] for k in ("response_type", "code_challenge_method", "resource", "scope")}
    query["login_hint"] = [login_hint]
    url = urlunparse(parts._replace(query=urlencode(query, doseq=True)))
    # The provider's own pages (a separate cookie jar: the browser's, at the provider's origin).
    with httpx2.Client(follow_redirects=False, timeout=30) as provider:
        for _ in range(20):
            answer = provider.get(url)
            url = urljoin(url, answer.headers["location"])
            if url.startswith(f"{admin}/approvals/oauth/callback"):
                break
    callback = url
    seen["code"] = parse_qs(urlparse(callback).query)["code"][0]
    # A flood of sign-ins started by anyone (300, unauthenticated) crowds out no one's.
    with httpx2.Client(follow_redirects=False, timeout=30) as flood:
        seen["flood"] = sorted({flood.get(f"{admin}/approvals/oauth/start").status_code for _ in range(300)})
    # The callback in another browser (no state cookie): refused, and the sign-in not used up.
    with httpx2.Client(follow_redirects=False, timeout=30) as other:
        refused = other.get(callback)
        seen["callback_elsewhere"] = [refused.status_code, refused.text.strip()]
    # A callback whose state is not this browser's cookie.
    forged = callback.replace("state=", "state=x")
    answer = gateway.get(forged)
    seen["callback_forged_state"] = answer.status_code
    # A state and cookie both made up (a cookie tossed from a sibling port): not issued here.
    made_up = "1700000000.abc.def"
    with httpx2.Client(follow_redirects=False, timeout=30, cookies={"toolgate_oauth_state": made_up}) as other:
        query = parse_qs(urlparse(callback).query)
        query["state"] = [made_up]
        answer = other.get(f"{admin}/approvals/oauth/callback?{urlencode(query, doseq=True)}")
        seen["callback_made_up_state"] = [answer.status_code, answer.text.strip()]
    # The issuer says it names itself in every answer (RFC 9207): one without `iss` is refused,
    # and does not use the sign-in up.
    query = parse_qs(urlparse(callback).query)
    query.pop("iss", None)
    answer = gateway.get(f"{admin}/approvals/oauth/callback?{urlencode(query, doseq=True)}")
    seen["callback_without_iss"] = [answer.status_code, answer.text.strip()]
    answer = gateway.get(callback)
    seen["callback"] = answer.status_code
    seen["callback_location"] = answer.headers.get("location")
    cookies = answer.headers.get_list("set-cookie")
    seen["session_cookie_attributes"] = [
        [a.strip() for a in c.split(";")[1:]] for c in cookies if c.startswith("toolgate_approvals=")
    ]
    seen["state_cookie_cleared"] = any(c.startswith("toolgate_oauth_state=;") and "Max-Age=0" in c for c in cookies)
    seen["callback_said"] = answer.text.strip()
    session = gateway.get(f"{admin}/approvals/api/session")
    seen["session"] = [session.status_code, session.json()]
    # The same callback again, with the state cookie it was started with: used up.
    with httpx2.Client(follow_redirects=False, timeout=30, cookies={"toolgate_oauth_state": state_cookie}) as again:
        replay = again.get(callback)
        seen["callback_again"] = [replay.status_code, replay.text.strip()]
    typed = gateway.post(
        f"{admin}/approvals/api/login",
        json={"credential": api_key},
        headers={"origin": admin},
    )
    seen["typed_credential"] = typed.status_code
print(json.dumps(seen))
