package io.hcomm4j;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Base64;
import java.util.Objects;

/**
 * Where a registered segment lies: which engine holds it and how to reach that engine, the segment's name, size and id,
 * and (for a segment in the engine's registered pool) the shared-memory file that same-host engines map. What
 * {@link TransferEngine#register} returns; the same is published in the store, so other engines find segments by name.
 * Serializable ({@link #toBytes()}, {@link #toText()}) to hand over out of band: {@link TransferEngine#connect(SegmentDescriptor,
 * java.time.Duration)} needs nothing from the store but the job's identity.
 *
 * <p>A descriptor names one registration: the segment id is new at every {@code register}, so a descriptor of a
 * segment that was unregistered (and perhaps registered again under the same name) makes transfers fail rather than
 * reach other memory over the wire.
 *
 * @param engine       name of the engine that registered the segment
 * @param engineId     that engine's id (its slot in the job)
 * @param host         the engine's data address (an IP literal)
 * @param port         the engine's data port
 * @param hostId       the engine's host identity (engines with the same one may share memory)
 * @param segment      the segment's name
 * @param segmentId    the registration's id, unique within its engine
 * @param byteSize     the segment's size in bytes
 * @param fileSequence the number of the engine's shared-memory file holding the segment, or -1 if it is not in the
 *                     engine's registered pool (then it is reached through the engine's progress engine only)
 * @param fileOffset   the segment's offset in that file (0 if none)
 */
public record SegmentDescriptor(String engine, int engineId, String host, int port, String hostId, String segment,
                                long segmentId, long byteSize, long fileSequence, long fileOffset) {
    private static final int MAGIC = 0x48585344; // "HXSD"
    private static final int VERSION = 1;
    private static final String TEXT_PREFIX = "hxfer1:";

    /** Checks the arguments. */
    public SegmentDescriptor {
        Objects.requireNonNull(engine, "engine");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(hostId, "hostId");
        Objects.requireNonNull(segment, "segment");
        if (engineId < 0) throw new IllegalArgumentException("engineId must be >= 0, was " + engineId);
        if (port < 1 || port > 65535) throw new IllegalArgumentException("port must be in [1, 65535], was " + port);
        if (byteSize < 0) throw new IllegalArgumentException("byteSize must be >= 0, was " + byteSize);
        if (fileSequence < -1) throw new IllegalArgumentException("fileSequence must be >= -1, was " + fileSequence);
        if (fileOffset < 0) throw new IllegalArgumentException("fileOffset must be >= 0, was " + fileOffset);
    }

    /** The engine this segment belongs to, as {@link TransferEngine#transfer} names it. */
    public RemoteEngine remote() {
        return new RemoteEngine(engine, engineId);
    }

    /** The binary form ({@link #fromBytes} reads it). */
    public byte[] toBytes() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(96 + engine.length() + segment.length() + hostId.length());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeByte(VERSION);
            out.writeInt(engineId);
            out.writeUTF(engine);
            out.writeUTF(host);
            out.writeInt(port);
            out.writeUTF(hostId);
            out.writeUTF(segment);
            out.writeLong(segmentId);
            out.writeLong(byteSize);
            out.writeLong(fileSequence);
            out.writeLong(fileOffset);
        } catch (IOException e) {
            throw new IllegalStateException(e); // a byte array does not fail
        }
        return bytes.toByteArray();
    }

    /**
     * Reads the binary form of {@link #toBytes()}.
     *
     * @throws IllegalArgumentException naming what is wrong, if {@code bytes} is not a descriptor
     */
    public static SegmentDescriptor fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            int magic = in.readInt();
            if (magic != MAGIC) throw new IllegalArgumentException("bytes are not a segment descriptor (magic 0x" + Integer.toHexString(magic) + ")");
            int version = in.readUnsignedByte();
            if (version != VERSION) throw new IllegalArgumentException("segment descriptor version " + version + " is not " + VERSION);
            int engineId = in.readInt();
            String engine = TransferConfig.checkName(in.readUTF(), "engine");
            String host = in.readUTF();
            int port = in.readInt();
            String hostId = in.readUTF();
            String segment = TransferConfig.checkName(in.readUTF(), "segment");
            SegmentDescriptor d = new SegmentDescriptor(engine, engineId, host, port, hostId, segment, in.readLong(), in.readLong(),
                    in.readLong(), in.readLong());
            if (in.available() != 0) throw new IllegalArgumentException("segment descriptor has " + in.available() + " bytes too many");
            return d;
        } catch (IOException e) {
            throw new IllegalArgumentException("bytes are not a whole segment descriptor (" + bytes.length + " bytes)", e);
        }
    }

    /** The text form: {@code hxfer1:} followed by the binary form in URL-safe base64 ({@link #fromText} reads it). */
    public String toText() {
        return TEXT_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(toBytes());
    }

    /**
     * Reads the text form of {@link #toText()}.
     *
     * @throws IllegalArgumentException naming what is wrong, if {@code text} is not a descriptor
     */
    public static SegmentDescriptor fromText(String text) {
        Objects.requireNonNull(text, "text");
        String t = text.trim();
        if (!t.startsWith(TEXT_PREFIX)) throw new IllegalArgumentException("text is not a segment descriptor (it does not start with " + TEXT_PREFIX + ")");
        byte[] bytes;
        try {
            bytes = Base64.getUrlDecoder().decode(t.substring(TEXT_PREFIX.length()));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("text is not a segment descriptor: " + e.getMessage(), e);
        }
        return fromBytes(bytes);
    }
}
