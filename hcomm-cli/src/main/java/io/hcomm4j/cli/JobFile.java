package io.hcomm4j.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The file by which {@code hcomm status} finds a job that {@code hcomm launch} runs on this machine: one per launcher,
 * {@code job-<pid>.properties} in a directory of this user's that nobody else may enter ({@code $XDG_RUNTIME_DIR/hcomm},
 * else {@code /tmp/hcomm-<uid>}; mode 0700), itself mode 0600. It holds the store's address, the job's secret, the
 * launcher's pid and process start time, when the job started, its ranks and its command. The launcher removes it when
 * the job ends (on SIGINT and SIGTERM too, from a shutdown hook); a file whose launcher is gone (SIGKILL, a crash) is
 * stale, and {@link #live} deletes it. Files and directories that another user owns or may read are never trusted.
 */
final class JobFile implements AutoCloseable {
    /** Name of the directory under {@code $XDG_RUNTIME_DIR}; the fallback is {@code /tmp/hcomm-<uid>}. */
    static final String DIRECTORY_NAME = "hcomm";
    private static final String PREFIX = "job-";
    private static final String SUFFIX = ".properties";
    private static final Set<PosixFilePermission> OWNER_ONLY_DIRECTORY = PosixFilePermissions.fromString("rwx------");
    private static final Set<PosixFilePermission> OWNER_ONLY_FILE = PosixFilePermissions.fromString("rw-------");
    /** Two reads of one process's start time agree to this much (the kernel counts in clock ticks). */
    private static final Duration SAME_START = Duration.ofSeconds(1);

    /**
     * What a job file says.
     *
     * @param pid          the launcher's process id: the job's id for {@code hcomm status --job}
     * @param processStart when the launcher's process started, so that a later process with a reused pid is not taken
     *                     for it (null if the system did not say)
     * @param started      when the launcher wrote the file (the job started)
     * @param store        the store's address, {@code host:port}
     * @param secret       the job's secret
     * @param ranks        the job's ranks: a number, or {@code MIN..MAX} while {@code --nnodes MIN:MAX} forms the job
     * @param command      the command the ranks run
     * @param file         where it was read from
     */
    record Job(long pid, Instant processStart, Instant started, String store, String secret, String ranks, String command,
               Path file) {
        /** One line for a list of jobs: {@code --job 1234: store 127.0.0.1:41234, 2 ranks, started ..., command ...}. */
        String describe() {
            return "--job " + pid + ": store " + store + ", " + ranks + " ranks, started " + started + ", command " + command;
        }
    }

    private final Path path;
    private final Thread removeAtExit;

    private JobFile(Path path) {
        this.path = path;
        this.removeAtExit = Thread.ofPlatform().name("hcomm-job-file").unstarted(this::delete);
    }

    /** Where this launcher's job file is. */
    Path path() {
        return path;
    }

    /**
     * The directory of the job files for the environment {@code env}: {@code $XDG_RUNTIME_DIR/hcomm} when that variable
     * names an absolute directory (a per-user directory that the login session owns), else {@code /tmp/hcomm-<uid>}.
     */
    static Path directory(Map<String, String> env) {
        String runtime = env.get("XDG_RUNTIME_DIR");
        if (runtime != null && !runtime.isBlank()) {
            Path dir = Path.of(runtime.trim());
            if (dir.isAbsolute() && Files.isDirectory(dir)) return dir.resolve(DIRECTORY_NAME);
        }
        return Path.of("/tmp", "hcomm-" + userId());
    }

    /**
     * Writes this process's job file (0600, in {@link #directory}, created 0700 if missing) and arranges for it to be
     * removed when this JVM exits; {@link #close} removes it sooner.
     *
     * @throws IOException if the directory cannot be made, is not this user's alone, or the file cannot be written
     */
    static JobFile write(Map<String, String> env, String store, String secret, String ranks, List<String> command)
            throws IOException {
        if (secret.indexOf('\n') >= 0 || secret.indexOf('\r') >= 0) throw new IOException("the secret holds a line break");
        Path dir = directory(env);
        ensurePrivateDirectory(dir);
        ProcessHandle self = ProcessHandle.current();
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("pid", Long.toString(self.pid()));
        fields.put("process_start", self.info().startInstant().map(Instant::toString).orElse(""));
        fields.put("started", Instant.now().toString());
        fields.put("store", store);
        fields.put("secret", secret);
        fields.put("ranks", ranks);
        fields.put("command", String.join(" ", command).replaceAll("[\\r\\n]+", " "));
        StringBuilder text = new StringBuilder("# hcomm launch: how to reach this job (hcomm status reads it); removed when the job ends\n");
        fields.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));

        Path file = dir.resolve(PREFIX + self.pid() + SUFFIX);
        // written whole under another name and renamed: a reader never sees half a file
        Path partial = dir.resolve("." + PREFIX + self.pid() + ".partial");
        Files.deleteIfExists(partial);
        try (var channel = Files.newByteChannel(partial, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(OWNER_ONLY_FILE))) {
            channel.write(java.nio.ByteBuffer.wrap(text.toString().getBytes(StandardCharsets.UTF_8)));
        }
        Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        JobFile jobFile = new JobFile(file);
        Runtime.getRuntime().addShutdownHook(jobFile.removeAtExit);
        return jobFile;
    }

    /** Removes the file (the job has ended). */
    @Override
    public void close() {
        delete();
        try {
            Runtime.getRuntime().removeShutdownHook(removeAtExit);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs or has run: it deletes the file as well
        }
    }

    private void delete() {
        try {
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // a file left behind is stale once this process is gone, and hcomm status removes it then
        }
    }

    /**
     * The jobs whose launchers run, oldest first, from the job files in {@link #directory}. Files of launchers that
     * are gone are deleted; files another user owns or may read, and files that do not parse, are passed over.
     */
    static List<Job> live(Map<String, String> env) {
        Path dir = directory(env);
        List<Job> jobs = new ArrayList<>();
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS) || directoryProblem(env) != null) return jobs;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*" + SUFFIX)) {
            for (Path f : files) {
                Optional<Job> job = read(f);
                if (job.isEmpty()) continue;
                if (alive(job.get())) {
                    jobs.add(job.get());
                } else {
                    Files.deleteIfExists(f);
                }
            }
        } catch (IOException e) {
            return jobs; // the directory went away meanwhile: no jobs to offer
        }
        jobs.sort(Comparator.comparing(Job::started));
        return jobs;
    }

    /** The job of a file, or empty for one that is not this user's alone or does not parse. */
    static Optional<Job> read(Path file) {
        try {
            if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) || privacyProblem(file, OWNER_ONLY_FILE) != null) {
                return Optional.empty();
            }
            Map<String, String> fields = new LinkedHashMap<>();
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                int eq = line.indexOf('=');
                if (!line.startsWith("#") && eq > 0) fields.put(line.substring(0, eq), line.substring(eq + 1));
            }
            String processStart = fields.getOrDefault("process_start", "");
            return Optional.of(new Job(Long.parseLong(fields.get("pid")),
                    processStart.isEmpty() ? null : Instant.parse(processStart), Instant.parse(fields.get("started")),
                    require(fields, "store"), require(fields, "secret"), fields.getOrDefault("ranks", "?"),
                    fields.getOrDefault("command", ""), file));
        } catch (IOException | RuntimeException e) { // RuntimeException: a missing or malformed field
            return Optional.empty();
        }
    }

    private static String require(Map<String, String> fields, String key) {
        String v = fields.get(key);
        if (v == null || v.isEmpty()) throw new IllegalArgumentException("no " + key);
        return v;
    }

    /** Why the job files of {@code env} are not used ({@link #privacyProblem} of their directory), or null. */
    static String directoryProblem(Map<String, String> env) {
        Path dir = directory(env);
        try {
            return Files.exists(dir, LinkOption.NOFOLLOW_LINKS) ? privacyProblem(dir, OWNER_ONLY_DIRECTORY) : null;
        } catch (IOException e) {
            return "cannot read " + dir + ": " + e.getMessage();
        }
    }

    /** Whether the job's launcher still runs: its pid is alive and started when the file says (pids are reused). */
    static boolean alive(Job job) {
        return ProcessHandle.of(job.pid()).filter(ProcessHandle::isAlive).map(h -> {
            Optional<Instant> start = h.info().startInstant();
            return job.processStart() == null || start.isEmpty()
                    || Duration.between(start.get(), job.processStart()).abs().compareTo(SAME_START) <= 0;
        }).orElse(false);
    }

    /**
     * Makes {@code dir} (mode 0700) if it does not exist; then insists that it is a directory, not a link, that this user
     * owns it and that nobody else may use it, since it will hold a secret.
     */
    static void ensurePrivateDirectory(Path dir) throws IOException {
        try {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIRECTORY));
        } catch (FileAlreadyExistsException exists) {
            // made before (by an earlier launcher, or by someone else: checked below)
        }
        String problem = privacyProblem(dir, OWNER_ONLY_DIRECTORY);
        if (problem != null) throw new IOException(problem);
    }

    /**
     * Why {@code path} may not hold or be a secret (not this user's, a link, or open to others beyond
     * {@code allowed}), or null if it may.
     */
    static String privacyProblem(Path path, Set<PosixFilePermission> allowed) throws IOException {
        PosixFileAttributes attributes = Files.readAttributes(path, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (attributes.isSymbolicLink()) return path + " is a symbolic link";
        String owner;
        try {
            owner = String.valueOf(Files.getAttribute(path, "unix:uid", LinkOption.NOFOLLOW_LINKS));
        } catch (UnsupportedOperationException | IllegalArgumentException noUnixView) {
            owner = attributes.owner().getName(); // as userId() falls back to the user name
        }
        if (!owner.equals(userId())) return path + " belongs to another user (" + owner + ")";
        Set<PosixFilePermission> extra = EnumSet.noneOf(PosixFilePermission.class);
        extra.addAll(attributes.permissions());
        extra.removeAll(allowed);
        if (!extra.isEmpty()) {
            return path + " is open to other users (mode " + PosixFilePermissions.toString(attributes.permissions())
                    + "; chmod " + (allowed == OWNER_ONLY_DIRECTORY ? "700" : "600") + " it)";
        }
        return null;
    }

    /** This process's user id (the owner of its {@code /proc/self}), or its user name where there is no such file. */
    static String userId() {
        try {
            return String.valueOf(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return System.getProperty("user.name");
        }
    }
}
