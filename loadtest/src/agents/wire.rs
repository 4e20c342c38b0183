//! The control channel between a coordinator and an agent: length-prefixed frames over TCP,
//! a challenge-response on a shared token, then every frame sealed.
//!
//! - **Frames**: a 4-byte big-endian length, a kind byte (0 plain, 1 sealed), the body.
//!   Plain frames carry the handshake (a few hundred bytes of JSON, at most
//!   [`MAX_PLAIN_FRAME`]); sealed ones the JSON messages of the run, at most [`MAX_FRAME`].
//!   A longer length is refused before anything is read into memory.
//! - **Handshake**: the agent sends a random nonce; the coordinator answers with its own and
//!   `HMAC-SHA256(token, "coordinator" ‖ agent nonce ‖ coordinator nonce)`, which the agent
//!   checks in constant time (`ring::hmac::verify`) before it does anything else. The token
//!   never crosses the wire, and a proof cannot be replayed (the agent's nonce is fresh).
//! - **Sealing**: each direction has its own AES-256-GCM key, `HMAC(token, direction ‖
//!   nonces)`, and numbers its frames from 0; the number is the nonce, so a frame that was
//!   altered, replayed, dropped or reordered does not open and ends the connection. The agent's
//!   first sealed frame is what proves to the coordinator that the agent knows the token too.
//!   What travels (S3 credentials among it) is therefore private to the two ends.
//!
//! Plain blocking sockets, not the load's runtime: a handful of connections exchanging a
//! message a second need no reactor, and keeping them out of the runtime means a saturated
//! runtime cannot delay a heartbeat or a stop.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Version of the protocol; both ends must speak the same. 2: an agent says its results are
/// complete (`Measured`) before its cleanup, then `Done`.
pub const PROTOCOL: u32 = 2;
/// Largest sealed frame: far above a second of results (a few tens of KiB per endpoint).
pub const MAX_FRAME: usize = 16 << 20;
/// Largest plain (handshake) frame.
pub const MAX_PLAIN_FRAME: usize = 4096;
/// How long a handshake may take in all.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest token accepted, in bytes.
pub const MIN_TOKEN: usize = 16;

const PLAIN: u8 = 0;
const SEALED: u8 = 1;
const NONCE_BYTES: usize = 32;

/// The shared secret of a coordinator and its agents (`--token-file`).
#[derive(Clone)]
pub struct Token(hmac::Key);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// A token from its bytes (leading and trailing whitespace is not part of it).
    pub fn new(secret: &[u8]) -> Result<Self, String> {
        let secret = secret.trim_ascii();
        if secret.len() < MIN_TOKEN {
            return Err(format!(
                "the agent token must be at least {MIN_TOKEN} bytes (e.g. `head -c 32 /dev/urandom | base64`)"
            ));
        }
        Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, secret)))
    }

    /// The token in `path`.
    pub fn read(path: &Path) -> Result<Self, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("--token-file {}: {e}", path.display()))?;
        Self::new(&bytes).map_err(|e| format!("--token-file {}: {e}", path.display()))
    }

    /// What a MAC signs: the protocol, a label, then two nonces.
    fn input(label: &str, a: &[u8], b: &[u8]) -> Vec<u8> {
        [b"ferry-load/1 ", label.as_bytes(), a, b].concat()
    }

    fn mac(&self, label: &str, a: &[u8], b: &[u8]) -> hmac::Tag {
        hmac::sign(&self.0, &Self::input(label, a, b))
    }

    /// Whether `tag` is [`Token::mac`]'s, compared in constant time.
    fn verify(&self, label: &str, a: &[u8], b: &[u8], tag: &[u8]) -> bool {
        hmac::verify(&self.0, &Self::input(label, a, b), tag).is_ok()
    }

    fn key(&self, label: &str, agent: &[u8], coordinator: &[u8]) -> LessSafeKey {
        let tag = self.mac(label, agent, coordinator);
        // HMAC-SHA256 gives 32 bytes, the AES-256 key length.
        let unbound = UnboundKey::new(&AES_256_GCM, tag.as_ref()).expect("a 32-byte key");
        LessSafeKey::new(unbound)
    }
}

/// Why the channel failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The peer closed the connection.
    Closed,
    /// Nothing arrived within the read timeout.
    TimedOut,
    /// The peer refused us, saying why (a wrong token, busy with another run).
    Refused(String),
    /// A frame too long, one that did not open, a message we do not understand.
    Bad(String),
    /// Any other socket error.
    Io(String),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed => f.write_str("connection closed"),
            Self::TimedOut => f.write_str("no message within the timeout"),
            Self::Refused(why) => write!(f, "refused: {why}"),
            Self::Bad(what) => write!(f, "protocol error: {what}"),
            Self::Io(e) => f.write_str(e),
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => Self::Closed,
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Self::TimedOut,
            _ => Self::Io(e.to_string()),
        }
    }
}

/// Write one frame.
fn write_frame(w: &mut impl Write, kind: u8, body: &[u8]) -> Result<(), WireError> {
    let len = u32::try_from(body.len() + 1)
        .ok()
        .filter(|&n| n as usize <= MAX_FRAME + 1)
        .ok_or_else(|| WireError::Bad(format!("a frame of {} bytes", body.len())))?;
    let mut out = Vec::with_capacity(5 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.push(kind);
    out.extend_from_slice(body);
    w.write_all(&out)?;
    Ok(())
}

/// Read one frame (its kind and body), refusing lengths above `max`.
fn read_frame(r: &mut impl Read, max: usize) -> Result<(u8, Vec<u8>), WireError> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head)?;
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len == 0 || len - 1 > max {
        return Err(WireError::Bad(format!(
            "a frame of {len} bytes (at most {max} here)"
        )));
    }
    let mut body = vec![0u8; len - 1];
    r.read_exact(&mut body)?;
    Ok((head[4], body))
}

/// The handshake's plain messages.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "hello", rename_all = "snake_case")]
enum Handshake {
    /// Agent to coordinator, first.
    Agent {
        protocol: u32,
        version: String,
        nonce: String,
    },
    /// Coordinator to agent: its nonce and its proof.
    Coordinator { nonce: String, proof: String },
    /// Either way: no (and why).
    Refused { reason: String },
}

fn send_plain(s: &mut TcpStream, h: &Handshake) -> Result<(), WireError> {
    let body = serde_json::to_vec(h).map_err(|e| WireError::Bad(e.to_string()))?;
    write_frame(s, PLAIN, &body)
}

fn recv_plain(s: &mut TcpStream) -> Result<Handshake, WireError> {
    let (kind, body) = read_frame(s, MAX_PLAIN_FRAME)?;
    if kind != PLAIN {
        return Err(WireError::Bad("a sealed frame during the handshake".into()));
    }
    let h: Handshake =
        serde_json::from_slice(&body).map_err(|e| WireError::Bad(format!("handshake: {e}")))?;
    if let Handshake::Refused { reason } = h {
        return Err(WireError::Refused(reason));
    }
    Ok(h)
}

fn fresh_nonce() -> Result<[u8; NONCE_BYTES], WireError> {
    let mut n = [0u8; NONCE_BYTES];
    SystemRandom::new()
        .fill(&mut n)
        .map_err(|_| WireError::Io("the system random generator failed".into()))?;
    Ok(n)
}

fn unhex(s: &str) -> Result<Vec<u8>, WireError> {
    hex::decode(s).map_err(|_| WireError::Bad("a handshake field is not hex".into()))
}

/// Tell a peer no, before or instead of a handshake (best effort: it may be gone).
pub fn refuse(mut stream: TcpStream, reason: &str) {
    let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = send_plain(
        &mut stream,
        &Handshake::Refused {
            reason: reason.into(),
        },
    );
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// The agent's side of the handshake: the channel once the coordinator has proved it holds
/// `token`. A coordinator that cannot is told so and refused.
pub fn accept(mut stream: TcpStream, token: &Token) -> Result<Channel, WireError> {
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let mine = fresh_nonce()?;
    send_plain(
        &mut stream,
        &Handshake::Agent {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            nonce: hex::encode(mine),
        },
    )?;
    let Handshake::Coordinator { nonce, proof } = recv_plain(&mut stream)? else {
        return Err(WireError::Bad("expected the coordinator's proof".into()));
    };
    let (theirs, proof) = (unhex(&nonce)?, unhex(&proof)?);
    if theirs.len() != NONCE_BYTES || !token.verify("coordinator", &mine, &theirs, &proof) {
        refuse(stream, "wrong token");
        return Err(WireError::Refused(
            "the coordinator does not know the token".into(),
        ));
    }
    Ok(Channel::new(
        stream,
        token.key("agent to coordinator", &mine, &theirs),
        token.key("coordinator to agent", &mine, &theirs),
    ))
}

/// The coordinator's side of the handshake: the channel, once the agent has said hello. The
/// agent's first sealed message proves it holds the token (it opens only if it does).
pub fn connect(mut stream: TcpStream, token: &Token) -> Result<Channel, WireError> {
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let Handshake::Agent {
        protocol,
        version,
        nonce,
    } = recv_plain(&mut stream)?
    else {
        return Err(WireError::Bad("expected the agent's hello".into()));
    };
    if protocol != PROTOCOL {
        let why = format!(
            "the agent speaks protocol {protocol} (ferry-load {version}), we speak {PROTOCOL} \
             (ferry-load {})",
            env!("CARGO_PKG_VERSION")
        );
        refuse(stream, &why);
        return Err(WireError::Refused(why));
    }
    let theirs = unhex(&nonce)?;
    if theirs.len() != NONCE_BYTES {
        return Err(WireError::Bad(
            "the agent's nonce has the wrong length".into(),
        ));
    }
    let mine = fresh_nonce()?;
    let proof = token.mac("coordinator", &theirs, &mine);
    send_plain(
        &mut stream,
        &Handshake::Coordinator {
            nonce: hex::encode(mine),
            proof: hex::encode(proof.as_ref()),
        },
    )?;
    Ok(Channel::new(
        stream,
        token.key("coordinator to agent", &theirs, &mine),
        token.key("agent to coordinator", &theirs, &mine),
    ))
}

/// Seals frames of one direction, numbering them.
struct Sealer {
    key: LessSafeKey,
    seq: u64,
}

/// Opens frames of one direction, in order.
struct Opener {
    key: LessSafeKey,
    seq: u64,
}

fn nonce_for(seq: u64) -> Nonce {
    let mut n = [0u8; NONCE_LEN];
    n[NONCE_LEN - 8..].copy_from_slice(&seq.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

impl Sealer {
    fn seal(&mut self, mut body: Vec<u8>) -> Result<Vec<u8>, WireError> {
        let nonce = nonce_for(self.seq);
        self.seq += 1;
        self.key
            .seal_in_place_append_tag(nonce, Aad::empty(), &mut body)
            .map_err(|_| WireError::Bad("sealing failed".into()))?;
        Ok(body)
    }

    fn send<T: Serialize>(&mut self, w: &mut impl Write, msg: &T) -> Result<(), WireError> {
        let body = serde_json::to_vec(msg).map_err(|e| WireError::Bad(e.to_string()))?;
        let sealed = self.seal(body)?;
        write_frame(w, SEALED, &sealed)
    }
}

impl Opener {
    fn open(&mut self, mut body: Vec<u8>) -> Result<Vec<u8>, WireError> {
        let nonce = nonce_for(self.seq);
        self.seq += 1;
        let n = self
            .key
            .open_in_place(nonce, Aad::empty(), &mut body)
            .map_err(|_| {
                WireError::Bad("a frame did not open (wrong token, or altered on the way)".into())
            })?
            .len();
        body.truncate(n);
        Ok(body)
    }

    fn recv<T: DeserializeOwned>(&mut self, r: &mut impl Read) -> Result<T, WireError> {
        let (kind, body) = read_frame(r, MAX_FRAME + 16)?;
        if kind != SEALED {
            // A refusal may still come plain (an agent that turned us down).
            if let Ok(Handshake::Refused { reason }) = serde_json::from_slice(&body) {
                return Err(WireError::Refused(reason));
            }
            return Err(WireError::Bad("a plain frame after the handshake".into()));
        }
        let plain = self.open(body)?;
        serde_json::from_slice(&plain).map_err(|e| WireError::Bad(format!("a message: {e}")))
    }
}

/// An authenticated, sealed connection.
pub struct Channel {
    stream: TcpStream,
    sealer: Sealer,
    opener: Opener,
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("peer", &self.stream.peer_addr().ok())
            .field("sent", &self.sealer.seq)
            .field("received", &self.opener.seq)
            .finish()
    }
}

impl Channel {
    fn new(stream: TcpStream, send: LessSafeKey, recv: LessSafeKey) -> Self {
        Self {
            stream,
            sealer: Sealer { key: send, seq: 0 },
            opener: Opener { key: recv, seq: 0 },
        }
    }

    /// The socket (for timeouts and addresses).
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Send one message.
    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), WireError> {
        self.sealer.send(&mut self.stream, msg)
    }

    /// Receive one message (within the socket's read timeout).
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T, WireError> {
        self.opener.recv(&mut self.stream)
    }

    /// The two directions apart, for a reader and a writer thread.
    pub fn split(self) -> Result<(SendHalf, RecvHalf), WireError> {
        let reader = self.stream.try_clone()?;
        Ok((
            SendHalf {
                stream: self.stream,
                sealer: self.sealer,
            },
            RecvHalf {
                stream: reader,
                opener: self.opener,
            },
        ))
    }
}

/// The sending direction of a [`Channel`].
pub struct SendHalf {
    stream: TcpStream,
    sealer: Sealer,
}

impl fmt::Debug for SendHalf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendHalf")
            .field("sent", &self.sealer.seq)
            .finish()
    }
}

impl SendHalf {
    /// Send one message (within the socket's write timeout).
    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), WireError> {
        self.sealer.send(&mut self.stream, msg)
    }

    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }
}

/// The receiving direction of a [`Channel`].
pub struct RecvHalf {
    stream: TcpStream,
    opener: Opener,
}

impl fmt::Debug for RecvHalf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvHalf")
            .field("received", &self.opener.seq)
            .finish()
    }
}

impl RecvHalf {
    /// Receive one message (within the socket's read timeout).
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T, WireError> {
        self.opener.recv(&mut self.stream)
    }

    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn token(s: &str) -> Token {
        Token::new(s.as_bytes()).unwrap()
    }

    /// An agent accepting one connection on 127.0.0.1 and a coordinator connected to it.
    fn pair(
        agent_token: Token,
        coordinator_token: Token,
    ) -> (Result<Channel, WireError>, Result<Channel, WireError>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let agent = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            accept(s, &agent_token)
        });
        let c = connect(TcpStream::connect(addr).unwrap(), &coordinator_token);
        (agent.join().unwrap(), c)
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Msg {
        n: u32,
        text: String,
    }

    #[test]
    fn tokens_are_long_enough() {
        assert!(Token::new(b"short").is_err());
        assert!(
            Token::new(b"  0123456789abcde  ").is_err(),
            "whitespace is not part of it"
        );
        assert!(Token::new(b"0123456789abcdef\n").is_ok());
        assert_eq!(format!("{:?}", token("0123456789abcdef")), "Token(..)");
    }

    #[test]
    fn the_right_token_gives_a_sealed_channel_both_ways() {
        let (a, c) = pair(token("a shared secret!"), token("a shared secret!"));
        let (mut a, mut c) = (a.unwrap(), c.unwrap());
        for n in 0..3 {
            c.send(&Msg {
                n,
                text: "to the agent".into(),
            })
            .unwrap();
            let m: Msg = a.recv().unwrap();
            assert_eq!((m.n, m.text.as_str()), (n, "to the agent"));
            a.send(&Msg {
                n: n + 10,
                text: "back".into(),
            })
            .unwrap();
            assert_eq!(c.recv::<Msg>().unwrap().n, n + 10);
        }
        // Split into a reader and a writer, the numbering goes on.
        let (mut tx, _rx) = a.split().unwrap();
        tx.send(&Msg {
            n: 99,
            text: String::new(),
        })
        .unwrap();
        assert_eq!(c.recv::<Msg>().unwrap().n, 99);
        drop(tx);
        drop(_rx);
        assert_eq!(c.recv::<Msg>().unwrap_err(), WireError::Closed);
    }

    #[test]
    fn a_wrong_token_is_refused_with_a_reason() {
        let (a, c) = pair(token("the agent's token"), token("not the agent's one"));
        assert!(matches!(a, Err(WireError::Refused(_))), "{a:?}");
        // The coordinator learns it from the agent's answer.
        let mut c = c.unwrap();
        assert_eq!(
            c.recv::<Msg>().unwrap_err(),
            WireError::Refused("wrong token".into())
        );
    }

    #[test]
    fn altered_replayed_and_oversized_frames_end_the_connection() {
        let mut body = Vec::new();
        let k = token("0123456789abcdef");
        let mut sealer = Sealer {
            key: k.key("x", b"1", b"2"),
            seq: 0,
        };
        let mut opener = Opener {
            key: k.key("x", b"1", b"2"),
            seq: 0,
        };
        let msg = Msg {
            n: 7,
            text: "hi".into(),
        };
        sealer.send(&mut body, &msg).unwrap();
        let first = body.clone();
        assert_eq!(opener.recv::<Msg>(&mut first.as_slice()).unwrap(), msg);
        // The same frame again (a replay) does not open as the next one.
        let err = opener.recv::<Msg>(&mut first.as_slice()).unwrap_err();
        assert!(matches!(err, WireError::Bad(_)), "{err:?}");
        // One flipped bit.
        let mut opener = Opener {
            key: k.key("x", b"1", b"2"),
            seq: 0,
        };
        let mut flipped = first.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(opener.recv::<Msg>(&mut flipped.as_slice()).is_err());
        // A key of the other direction.
        let mut other = Opener {
            key: k.key("y", b"1", b"2"),
            seq: 0,
        };
        assert!(other.recv::<Msg>(&mut first.as_slice()).is_err());
        // A length over the limit is refused from the length alone.
        let mut huge = ((MAX_FRAME + 100) as u32).to_be_bytes().to_vec();
        huge.push(SEALED);
        let err = read_frame(&mut huge.as_slice(), MAX_FRAME).unwrap_err();
        assert!(
            matches!(err, WireError::Bad(ref m) if m.contains("at most")),
            "{err:?}"
        );
        let err = read_frame(&mut [0u8, 0, 0, 0, 0].as_slice(), 10).unwrap_err();
        assert!(matches!(err, WireError::Bad(_)));
    }

    #[test]
    fn a_silent_or_foreign_peer_does_not_hang_the_handshake() {
        // A peer that speaks something else: refused at once, while the peer still holds the
        // connection open (not at its end).
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (done, held) = std::sync::mpsc::channel::<()>();
        let junk = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap();
            // Open until the handshake has returned (or the test is gone).
            let _ = held.recv();
        });
        let err = connect(
            TcpStream::connect(addr).unwrap(),
            &token("0123456789abcdef"),
        );
        assert!(matches!(err, Err(WireError::Bad(_))), "{err:?}");
        done.send(()).unwrap();
        junk.join().unwrap();
    }
}
