//! The page's routes: the static page, sign-in, the waiting calls, answers, the audit view.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::origin::{host_is, same_origin};
use super::session::{Session, Sessions};

mod opening;
mod signed_in;
use super::{ApprovalPage, assets};
use crate::approvals::{ApprovalError, ApprovalRequest, ApprovalResponse};
use crate::clock::{Clock as _, SystemClock};
pub(super) use opening::open_session;
use signed_in::{MAX_FAILED_SIGN_INS, checked, session_of, sign_in_failed, signing_in_paused};

/// The largest request body read: sign-in and answers are small.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The longest note an approver may write.
const MAX_NOTE_CHARS: usize = 2_000;

/// How much of a result the page shows of an approved call.
const MAX_RESULT_CHARS: usize = 64 * 1024;

/// Answers kept for the page's "answered here" list.
const ANSWERED_KEPT: usize = 50;

/// The header carrying the session's CSRF token on every state change.
const CSRF_HEADER: &str = "x-toolgate-csrf";

pub(super) struct Shared {
    page: ApprovalPage,
    sessions: Sessions,
    answered: Mutex<VecDeque<Value>>,
    /// When recent sign-ins failed, oldest first (at most `MAX_FAILED_SIGN_INS`).
    failed_sign_ins: Mutex<VecDeque<std::time::Instant>>,
}

type Page = State<Arc<Shared>>;

pub(super) fn router(page: ApprovalPage) -> (Router, super::PageSessions) {
    let shared = Arc::new(Shared {
        page,
        sessions: Sessions::default(),
        answered: Mutex::default(),
        failed_sign_ins: Mutex::default(),
    });
    let opener = super::PageSessions(Arc::clone(&shared));
    let router = Router::new()
        .route("/approvals", get(assets::page))
        .route("/approvals/", get(assets::page))
        .route("/approvals/page.js", get(assets::script))
        .route("/approvals/page.css", get(assets::style))
        .route("/approvals/api/session", get(session))
        .route("/approvals/api/sign-in", get(sign_in_options))
        .route("/approvals/api/login", post(login))
        .route("/approvals/api/logout", post(logout))
        .route("/approvals/api/pending", get(pending))
        .route("/approvals/api/answer", post(answer))
        .route("/approvals/api/answered", get(answered))
        .route("/approvals/api/audit", get(audit))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
        .with_state(shared);
    (router, opener)
}

/// How a person may sign in here: with a credential (unless turned off), and the links to ways
/// of signing in that routes outside the page run.
async fn sign_in_options(State(shared): Page) -> Response {
    let links: Vec<Value> = shared
        .page
        .sign_in_links
        .iter()
        .map(|(label, path)| json!({"label": label, "path": path}))
        .collect();
    axum::Json(json!({"credential": shared.page.credential_sign_in, "links": links}))
        .into_response()
}

/// A JSON error `{"error": message}` with `status`.
fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

/// A refusal not yet made a response (a response is too large to return as an error), and the
/// `Set-Cookie` headers that go with it (those clearing a tossed cookie).
pub(super) struct Refusal(StatusCode, String, Vec<String>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = refuse(self.0, self.1);
        for cookie in self.2 {
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
        }
        response
    }
}

/// On every response: no caching, no framing, no sniffing, no referrer, the page's CSP. Before
/// every request: the `Host` is allowed, and a state change comes from the page's own origin.
async fn guard(State(shared): Page, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let allowed = shared
        .page
        .allowed_hosts
        .as_ref()
        .is_none_or(|hosts| hosts.iter().any(|allowed| host_is(&host, allowed)));
    let mut response = if !allowed {
        refuse(
            StatusCode::FORBIDDEN,
            "this host is not one the page serves",
        )
    } else if request.method() == axum::http::Method::POST && !same_origin(request.headers(), &host)
    {
        refuse(
            StatusCode::FORBIDDEN,
            "refused: the request comes from another origin than the page",
        )
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (
            header::CONTENT_SECURITY_POLICY,
            assets::CONTENT_SECURITY_POLICY,
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn who(session: &Session) -> Value {
    json!({
        "approver": session.principal.id,
        "groups": session.principal.groups,
        "csrf": session.csrf,
    })
}

async fn session(State(shared): Page, headers: HeaderMap) -> Response {
    match session_of(&shared, &headers) {
        Ok((_, session)) => axum::Json(who(&session)).into_response(),
        Err(refusal) => refusal.into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Login {
    credential: String,
}

async fn login(State(shared): Page, body: axum::Json<Login>) -> Response {
    if !shared.page.credential_sign_in {
        return refuse(
            StatusCode::FORBIDDEN,
            "signing in with a credential is turned off here: use the sign-in link",
        );
    }
    if let Some(wait) = signing_in_paused(&shared) {
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{MAX_FAILED_SIGN_INS} sign-ins failed within a minute: signing in is paused for {} s",
                wait.as_secs().max(1)
            ),
        );
    }
    let credential = body.0.credential;
    let authenticate = Arc::clone(&shared.page.authenticate);
    // An authenticator may verify a token or read a file: off the event loop.
    let signed_in =
        tokio::task::spawn_blocking(move || authenticate.authenticate_until(&credential))
            .await
            .ok()
            .flatten();
    let Some((principal, credential_ends)) = signed_in else {
        sign_in_failed(&shared);
        return refuse(
            StatusCode::UNAUTHORIZED,
            "this credential names nobody here",
        );
    };
    let (session, cookie) = match open_session(&shared, principal, credential_ends) {
        Ok(opened) => opened,
        Err(refused) => return refused.into_response(),
    };
    let mut response = axum::Json(who(&session)).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

async fn logout(State(shared): Page, headers: HeaderMap) -> Response {
    let (id, _) = match checked(&shared, &headers) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    shared.sessions.close(&id);
    let mut response = axum::Json(json!({"signed_out": true})).into_response();
    let expired = shared.page.cookie("", 0);
    if let Ok(value) = HeaderValue::from_str(&expired) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// A waiting call, and the approvers the policy in force names for it where it still asks.
type Waiting = (
    ApprovalRequest,
    Option<Vec<Arc<crate::decision::Approvers>>>,
);

/// The waiting calls, read off the event loop (a store may be SQLite or PostgreSQL).
async fn waiting(shared: &Shared) -> Result<Vec<Waiting>, Refusal> {
    let controller = Arc::clone(&shared.page.controller);
    tokio::task::spawn_blocking(move || {
        controller.pending_requests().map(|requests| {
            requests
                .into_iter()
                .map(|request| {
                    let now = controller.approvers_now(&request, None);
                    (request, now)
                })
                .collect()
        })
    })
    .await
    .map_err(|_| {
        Refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the store read failed".to_owned(),
            Vec::new(),
        )
    })?
    .map_err(|error| {
        Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot read the approval store: {error}"),
            Vec::new(),
        )
    })
}

/// One waiting call as the page shows it: everything, the arguments whole — to whoever both its
/// request's approvers and those the policy in force names admit.
fn shown(
    (request, now): &Waiting,
    session: &Session,
    description: Option<&str>,
    upstream: Option<String>,
) -> Value {
    let asker = request.call.principal.as_deref();
    let admitted = |approvers: &[Arc<crate::decision::Approvers>]| {
        crate::decision::admitted_out_of_band(
            approvers.iter().map(|approvers| &**approvers),
            Some(&session.principal),
            asker,
        )
    };
    let may_answer =
        admitted(&request.approvers).and_then(|()| now.as_deref().map_or(Ok(()), admitted));
    // The canonical form the digest covers (one spelling per number), laid out for reading.
    let canonical = crate::canonical::canonical_json(&request.call.arguments);
    let arguments = serde_json::from_str::<Value>(&canonical)
        .and_then(|value| serde_json::to_string_pretty(&value))
        .unwrap_or(canonical);
    // Whoever may not answer reads what is asked and why, not the arguments (they may hold what
    // only the approvers the rule names should read).
    let may = may_answer.is_ok();
    let (arguments, argument_chars) = if may {
        let chars = arguments.chars().count();
        (Some(arguments), chars)
    } else {
        (None, 0)
    };
    json!({
        "id": request.approval_id.to_string(),
        "tool": request.call.tool_name,
        "description": description,
        "upstream": upstream,
        "principal": asker.map(|principal| &principal.id),
        "reason": request.reason.as_str(),
        // Only to those who may answer: the digests of arguments they may not read would let
        // them test guesses at those arguments offline.
        "digest": may.then_some(&request.digest),
        "definition_digest": may.then_some(&request.definition_digest),
        "requested_at_ms": request.requested_at_ms,
        "expires_at_ms": request.expires_at_ms,
        "arguments": arguments,
        "argument_chars": argument_chars,
        "approvers": request.approvers.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "may_answer": may,
        "why_not": may_answer.err().map(|refusal| refusal.to_string()),
    })
}

async fn pending(State(shared): Page, headers: HeaderMap) -> Response {
    let (_, session) = match checked(&shared, &headers) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let requests = match waiting(&shared).await {
        Ok(requests) => requests,
        Err(refusal) => return refusal.into_response(),
    };
    let specs = shared.page.controller.specs();
    let description = |tool: &str| {
        specs
            .iter()
            .find(|spec| spec.name == tool)
            .map(|spec| spec.description.as_str())
    };
    let calls: Vec<Value> = requests
        .iter()
        .map(|waiting| {
            let tool = &waiting.0.call.tool_name;
            let upstream = shared.page.upstream_of.as_ref().and_then(|of| of(tool));
            shown(waiting, &session, description(tool), upstream)
        })
        .collect();
    axum::Json(json!({ "now_ms": SystemClock.now_ms(), "pending": calls })).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    id: String,
    digest: String,
    verdict: Verdict,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Verdict {
    Approve,
    Reject,
}

async fn answer(State(shared): Page, headers: HeaderMap, body: axum::Json<Answer>) -> Response {
    let (_, session) = match checked(&shared, &headers) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let Answer {
        id,
        digest,
        verdict,
        note,
    } = body.0;
    let Ok(approval_id) = id.parse::<crate::approvals::ApprovalId>() else {
        return refuse(StatusCode::BAD_REQUEST, "not an approval id");
    };
    let note = note.filter(|note| !note.trim().is_empty());
    if note
        .as_ref()
        .is_some_and(|note| note.chars().count() > MAX_NOTE_CHARS)
    {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!("a note holds at most {MAX_NOTE_CHARS} characters"),
        );
    }
    let response = match verdict {
        Verdict::Approve => ApprovalResponse::approve(approval_id),
        Verdict::Reject => ApprovalResponse::reject(approval_id),
    }
    .by_principal(crate::Principal::clone(&session.principal))
    // Checked in the store's take, in one step with it: the call this page showed (its digest),
    // and the page's own rule that a call's asker answers it here only where a rule allows it
    // (the model's client key signed in here must not approve what the model asked for).
    .for_digest(digest)
    .out_of_band();
    let response = match note {
        Some(note) => response.with_note(note),
        None => response,
    };
    let (result, request) = match shared.page.controller.resolve_request_async(response).await {
        Ok(resolved) if resolved.expired => {
            return refuse(
                StatusCode::CONFLICT,
                format!(
                    "approval {approval_id} had expired before this answer; nothing ran (the model may propose the call again)"
                ),
            );
        }
        Ok(resolved) => (resolved.result, resolved.request),
        Err(ApprovalError::ApproverRefused { refusal, .. }) => {
            return refuse(StatusCode::FORBIDDEN, format!("{refusal}; nothing ran"));
        }
        Err(ApprovalError::NotTheCallRead { .. }) => {
            return refuse(
                StatusCode::CONFLICT,
                "the call differs from the one this page showed; reload and read it again. Nothing ran",
            );
        }
        Err(ApprovalError::NotPending { .. }) => {
            return refuse(
                StatusCode::CONFLICT,
                format!(
                    "approval {approval_id} is no longer waiting (answered elsewhere, expired or withdrawn); nothing ran"
                ),
            );
        }
        Err(error) => {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{error}; nothing ran"),
            );
        }
    };
    let content: String = result.content.chars().take(MAX_RESULT_CHARS).collect();
    let cut = result.content.len() - content.len();
    let outcome = json!({
        "id": approval_id.to_string(),
        "tool": request.call.tool_name,
        "verdict": verdict,
        "by": session.principal.id,
        "asked_by": request.call.principal.as_deref().map(|principal| &principal.id),
        "requested_at_ms": request.requested_at_ms,
        "time_ms": SystemClock.now_ms(),
        "is_error": result.is_error,
        "content": content,
        "content_bytes_not_shown": cut,
    });
    let mut answered = shared
        .answered
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if answered.len() == ANSWERED_KEPT {
        answered.pop_front();
    }
    answered.push_back(outcome.clone());
    drop(answered);
    axum::Json(outcome).into_response()
}

/// The answers given on this page since the process started, newest last.
async fn answered(State(shared): Page, headers: HeaderMap) -> Response {
    let session = match checked(&shared, &headers) {
        Ok((_, session)) => session,
        Err(refusal) => return refusal.into_response(),
    };
    // A result is shown only to whoever answered: it may hold what the others may not read.
    let answered: Vec<Value> = shared
        .answered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|entry| entry["by"] == session.principal.id.as_str())
        .cloned()
        .collect();
    axum::Json(json!({ "answered": answered })).into_response()
}

async fn audit(State(shared): Page, headers: HeaderMap) -> Response {
    if let Err(refusal) = checked(&shared, &headers) {
        return refusal.into_response();
    }
    let Some(view) = shared.page.audit.clone() else {
        return axum::Json(json!({ "configured": false })).into_response();
    };
    match tokio::task::spawn_blocking(move || view.snapshot(100)).await {
        Ok(Ok(snapshot)) => {
            axum::Json(json!({ "configured": true, "snapshot": snapshot })).into_response()
        }
        Ok(Err(problem)) => refuse(StatusCode::SERVICE_UNAVAILABLE, problem),
        Err(_) => refuse(StatusCode::INTERNAL_SERVER_ERROR, "the audit read failed"),
    }
}
