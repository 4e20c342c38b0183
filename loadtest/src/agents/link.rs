//! A channel in use: a writer thread that sends what it is given and a heartbeat every second
//! when there is nothing else, a reader thread that hands every message it receives to one
//! event queue, and says when the peer is lost (closed, silent past the timeout, or speaking
//! nonsense). Both ends of the protocol use it, the coordinator with one link per agent.

use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::messages::Heartbeat;
use super::wire::{Channel, WireError};

/// A heartbeat goes out after this long without another message.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// Messages queued for the writer at most: minutes of intervals. A peer that does not take
/// them is as good as lost.
pub const QUEUE: usize = 256;

/// What a link tells its owner.
#[derive(Debug)]
pub enum Event<I> {
    /// A message (heartbeats are not passed on).
    Msg(I),
    /// The peer is gone, and why.
    Lost(WireError),
}

/// The sending side of a link and the threads behind it.
#[derive(Debug)]
pub struct Link<O> {
    tx: Option<SyncSender<O>>,
    stream: TcpStream,
    writer: Option<JoinHandle<()>>,
    closing: Arc<AtomicBool>,
}

impl<O: Serialize + Heartbeat + Send + 'static> Link<O> {
    /// Start the threads of `ch`: its messages go to `events` tagged with `id`; `timeout` is
    /// how long the peer may stay silent (it sends heartbeats too) and how long a write may
    /// block.
    pub fn start<I>(
        ch: Channel,
        id: usize,
        events: SyncSender<(usize, Event<I>)>,
        timeout: Duration,
    ) -> Result<Self, WireError>
    where
        I: DeserializeOwned + Heartbeat + Send + 'static,
    {
        ch.stream().set_read_timeout(Some(timeout))?;
        ch.stream().set_write_timeout(Some(timeout))?;
        let stream = ch.stream().try_clone()?;
        let (mut send, mut recv) = ch.split()?;
        let (tx, rx): (SyncSender<O>, Receiver<O>) = sync_channel(QUEUE);
        let closing = Arc::new(AtomicBool::new(false));
        let closed = closing.clone();
        let writer = std::thread::Builder::new()
            .name("ferry-load-link-tx".into())
            .spawn(move || {
                loop {
                    let msg = match rx.recv_timeout(HEARTBEAT) {
                        Ok(m) => m,
                        // Closing: what is queued goes out, then the connection closes (other
                        // senders may still hold the queue open).
                        Err(_) if closed.load(Ordering::SeqCst) => match rx.try_recv() {
                            Ok(m) => m,
                            Err(_) => break,
                        },
                        Err(RecvTimeoutError::Timeout) => O::heartbeat(),
                        Err(RecvTimeoutError::Disconnected) => break,
                    };
                    if send.send(&msg).is_err() {
                        // The reader sees the failure too and reports it.
                        break;
                    }
                }
                let _ = send.stream().shutdown(Shutdown::Write);
            })
            .map_err(|e| WireError::Io(e.to_string()))?;
        let reader = std::thread::Builder::new()
            .name("ferry-load-link-rx".into())
            .spawn(move || {
                loop {
                    match recv.recv::<I>() {
                        Ok(m) if m.is_heartbeat() => {}
                        Ok(m) => {
                            if events.send((id, Event::Msg(m))).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            let _ = events.send((id, Event::Lost(e)));
                            break;
                        }
                    }
                }
                let _ = recv.stream().shutdown(Shutdown::Read);
            })
            .map_err(|e| WireError::Io(e.to_string()))?;
        // The reader ends by itself when the socket closes; it is not joined (it may be
        // waiting for room in the owner's event queue).
        drop(reader);
        Ok(Self {
            tx: Some(tx),
            stream,
            writer: Some(writer),
            closing,
        })
    }

    /// Queue `msg` for the peer; `false` when the link is gone or so far behind that the
    /// peer must be taken as lost.
    pub fn send(&self, msg: O) -> bool {
        match self.tx.as_ref().map(|tx| tx.try_send(msg)) {
            Some(Ok(())) => true,
            Some(Err(TrySendError::Full(_) | TrySendError::Disconnected(_))) | None => false,
        }
    }

    /// A handle that can send from another thread.
    pub fn sender(&self) -> Option<LinkSender<O>> {
        self.tx.clone().map(LinkSender)
    }

    /// Send what is queued, then close both ways (waiting at most about a heartbeat and the
    /// write timeout).
    pub fn close(mut self) {
        self.closing.store(true, Ordering::SeqCst);
        self.tx = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

impl<O> Drop for Link<O> {
    fn drop(&mut self) {
        // An abandoned link (not closed) drops what is queued: a drop must not wait. The
        // threads end when the socket closes.
        if self.writer.is_some() {
            self.closing.store(true, Ordering::SeqCst);
            let _ = self.stream.shutdown(Shutdown::Both);
        }
    }
}

/// Sends on a [`Link`] from another thread (an agent's run sends its intervals this way).
#[derive(Debug)]
pub struct LinkSender<O>(SyncSender<O>);

impl<O> Clone for LinkSender<O> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<O> LinkSender<O> {
    /// As [`Link::send`].
    pub fn send(&self, msg: O) -> bool {
        self.0.try_send(msg).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::messages::{ToAgent, ToCoordinator};
    use crate::agents::wire::{Token, accept, connect};
    use std::net::TcpListener;

    /// A coordinator's and an agent's channel over 127.0.0.1.
    fn channels() -> (Channel, Channel) {
        let token = Token::new(b"a token for the link tests").unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = token.clone();
        let agent = std::thread::spawn(move || accept(l.accept().unwrap().0, &t).unwrap());
        let coordinator = connect(TcpStream::connect(addr).unwrap(), &token).unwrap();
        (coordinator, agent.join().unwrap())
    }

    #[test]
    fn heartbeats_keep_a_quiet_link_alive_and_silence_ends_it() {
        let timeout = Duration::from_millis(2500);
        let (c, a) = channels();
        let (ctx, crx) = sync_channel(16);
        let (atx, arx) = sync_channel(16);
        let coordinator: Link<ToAgent> = Link::start::<ToCoordinator>(c, 7, ctx, timeout).unwrap();
        let agent: Link<ToCoordinator> = Link::start::<ToAgent>(a, 0, atx, timeout).unwrap();
        // Longer than the timeout with nothing to say: heartbeats, no loss, nothing passed on.
        assert!(matches!(
            crx.recv_timeout(timeout + HEARTBEAT * 2),
            Err(RecvTimeoutError::Timeout)
        ));
        assert!(coordinator.send(ToAgent::Stop {
            reason: "test".into()
        }));
        match arx.recv_timeout(Duration::from_secs(20)) {
            Ok((0, Event::Msg(ToAgent::Stop { reason }))) => assert_eq!(reason, "test"),
            other => panic!("{other:?}"),
        }
        // The agent's side goes away without closing: the coordinator hears of it.
        drop(agent);
        match crx.recv_timeout(Duration::from_secs(20)) {
            Ok((7, Event::Lost(_))) => {}
            other => panic!("{other:?}"),
        }
        coordinator.close();
    }

    #[test]
    fn a_silent_peer_is_lost_after_the_timeout() {
        let (c, _silent) = channels();
        let (tx, rx) = sync_channel(16);
        let _link: Link<ToAgent> =
            Link::start::<ToCoordinator>(c, 1, tx, Duration::from_millis(500)).unwrap();
        // The peer holds its socket open and says nothing, not even heartbeats.
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok((1, Event::Lost(WireError::TimedOut))) => {}
            other => panic!("{other:?}"),
        }
    }
}
