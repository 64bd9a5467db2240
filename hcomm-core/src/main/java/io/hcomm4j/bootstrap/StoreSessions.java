package io.hcomm4j.bootstrap;

import static io.hcomm4j.bootstrap.StoreProtocol.*;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The server side of "no mutation applied twice": what a {@link TcpStoreServer} knows of each client id (HELLO) across
 * its connections, namely how many of its mutations were applied and the reply to the last one, so that a client whose
 * connection broke between a request and its reply learns whether the request was applied (see {@link StoreProtocol}).
 * Entries of clients gone for {@link #CLIENT_MEMORY} are pruned.
 */
final class StoreSessions {
    /**
     * How long the server remembers a client whose connection ended: longer than a client tries to reconnect
     * (HCOMM_STORE_RECONNECT is at most 10 minutes), so a client that comes back still learns whether its last
     * mutation was applied.
     */
    static final Duration CLIENT_MEMORY = Duration.ofMinutes(15);
    /** How long a client's new connection waits for the thread of its previous one to end (see {@link #hello}). */
    private static final Duration SUPERSEDE_JOIN = Duration.ofSeconds(5);
    private static final int MIN_PRUNE_AT = 64;
    private static final Reply OK_REPLY = out -> out.writeByte(OK);

    private final long incarnation;
    private final Map<Long, Client> clients = new ConcurrentHashMap<>();
    /** Acceptor-only: client count at which gone clients are pruned next. */
    private int pruneAt = MIN_PRUNE_AT;

    StoreSessions(long incarnation) {
        this.incarnation = incarnation;
    }

    /** One accepted connection: its channel, the thread serving it, and the client it said it is (after HELLO). */
    static final class Connection {
        final SocketChannel channel;
        Thread thread;
        /** Set by HELLO; read and written only by this connection's thread. */
        Client client;

        Connection(SocketChannel channel) {
            this.channel = channel;
        }
    }

    /**
     * A client, across its connections. Only the thread of the client's current connection changes it; a new connection
     * takes over after the old one's thread has ended ({@link #hello}), so a mutation and its count are never split.
     */
    private static final class Client {
        volatile Connection connection;
        /** Mutations applied for this client since this server started. */
        long applied;
        /** The reply to the last applied mutation, as sent. */
        Reply last;
        /** System.nanoTime() when its connection ended, 0 while connected. */
        volatile long endedAt;
    }

    /** A reply, kept so that it can be sent again to a client that missed it. */
    @FunctionalInterface
    interface Reply {
        void write(DataOutputStream out) throws IOException;
    }

    /** {@link #mutated} with the reply OK and nothing else. */
    static void mutatedOk(Connection c, DataOutputStream out) throws IOException {
        mutated(c, out, OK_REPLY);
    }

    /**
     * A mutation was applied for connection {@code c}: counts it for the connection's client and keeps the reply (which
     * shares the stored, never mutated arrays), then sends it. Counting happens before the reply is written, so a client
     * that never got the reply learns on its next connection that the mutation was applied.
     */
    static void mutated(Connection c, DataOutputStream out, Reply reply) throws IOException {
        Client client = c.client;
        if (client != null) {
            client.applied++;
            client.last = reply;
        }
        reply.write(out);
    }

    /** Connection {@code c} ended: if it was its client's current one, the client's memory starts to run out. */
    static void ended(Connection c) {
        Client client = c.client;
        if (client != null && client.connection == c) client.endedAt = System.nanoTime();
    }

    /** Acceptor-only: forgets clients gone for {@link #CLIENT_MEMORY}, when the table has doubled since the last time. */
    void prune() {
        if (clients.size() < pruneAt) return;
        long now = System.nanoTime();
        clients.values().removeIf(x -> x.endedAt != 0 && now - x.endedAt > CLIENT_MEMORY.toNanos());
        pruneAt = Math.max(MIN_PRUNE_AT, 2 * clients.size());
    }

    void clear() {
        clients.clear();
    }

    /**
     * HELLO from client {@code id}, which counts {@code completed} mutations answered. A client has at most one
     * connection that counts: this one supersedes an earlier one, whose thread is ended first (its channel closed, the
     * thread interrupted and joined), so a mutation still being applied there is counted before the counts are compared.
     */
    void hello(Connection c, long id, long completed, DataOutputStream out) throws IOException {
        Client client = clients.get(id);
        boolean known = client != null;
        if (!known) {
            client = new Client();
            Client raced = clients.putIfAbsent(id, client);
            if (raced != null) {
                client = raced;
                known = true;
            }
        }
        synchronized (client) {
            Connection previous = client.connection;
            if (previous != null && previous != c && previous.thread != Thread.currentThread()) {
                StoreProtocol.closeQuietly(previous.channel);
                previous.thread.interrupt();
                try {
                    if (!previous.thread.join(SUPERSEDE_JOIN)) {
                        writeError(out, "the previous connection of this client is still being served after " + SUPERSEDE_JOIN);
                        return;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while superseding a connection");
                }
            }
            client.connection = c;
            client.endedAt = 0;
            c.client = client;
            byte state;
            if (!known) {
                state = HELLO_NEW;
            } else if (client.applied == completed) {
                state = HELLO_IN_SYNC;
            } else if (client.applied == completed + 1 && client.last != null) {
                state = HELLO_APPLIED;
            } else {
                writeError(out, "this store applied " + client.applied + " mutations of the client, which counts " + completed);
                return;
            }
            out.writeByte(OK);
            out.writeLong(incarnation);
            out.writeByte(state);
            if (state == HELLO_APPLIED) client.last.write(out);
        }
    }
}
