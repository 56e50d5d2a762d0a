package org.ddp4j.debug;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.internal.Setting;

/**
 * Where the flight-recorder dumps live and how they are read: one JSON file per rank,
 * {@code ddp4j-flight-recorder-rank<R>.json} in {@code DDP4J_DEBUG_DIR} (default: the working
 * directory), written atomically by each rank when a collective times out or fails, or when
 * someone touches {@code ddp4j-dump-request} in that folder. {@link FlightRecorderReport} turns a
 * set of them into one summary.
 *
 * <p>The file's fields follow PyTorch's flight-recorder dump where they fit: {@code version},
 * {@code pg_config} and {@code pg_status} (by process-group id), {@code entries} (each with
 * {@code record_id}, {@code pg_id}, {@code collective_seq_id}, {@code p2p_seq_id},
 * {@code profiling_name}, {@code state}, {@code time_created_ns},
 * {@code time_discovered_started_ns}, {@code time_discovered_completed_ns}, {@code duration_ms},
 * {@code input_sizes}, {@code input_dtypes}, {@code is_p2p}, {@code timeout_ms}); ddp4j adds
 * {@code job_id} (the job's identity, the same in every rank's dump of one job: see {@link #job}),
 * {@code rank}, {@code world_size}, {@code trigger}, the call in words ({@code description}), its
 * transport ({@code gloo}, {@code shm}, {@code shm+gloo}, {@code nccl}), DDP's bucket, and every
 * Java thread's stack ({@code threads}, with the main thread's first frame in user code as
 * {@code main_thread_location}). States are {@code queued}, {@code started}, {@code completed},
 * {@code failed}; times are wall-clock nanoseconds since the epoch.
 */
public final class FlightRecorderDump {
    /** The value of the {@code version} field of the dumps this version writes. */
    public static final String VERSION = "ddp4j-flight-recorder-1";
    /** The file a user touches to make every rank that sees that folder write a dump. */
    public static final String REQUEST_FILE = "ddp4j-dump-request";
    /**
     * The field holding the job's identity, which the ranks of one job agree on when their group
     * starts; dumps written before ddp4j recorded it have none.
     */
    public static final String JOB_FIELD = "job_id";

    private static final String PREFIX = "ddp4j-flight-recorder-rank";
    private static final String SUFFIX = ".json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private FlightRecorderDump() {}

    /**
     * The dump folder: {@code DDP4J_DEBUG_DIR}, else the working directory.
     *
     * @param env the environment, e.g. {@code System.getenv()}
     */
    public static Path directory(Map<String, String> env) {
        String dir = Setting.DEBUG_DIR.raw(env);
        return dir != null ? Paths.get(dir) : Paths.get("").toAbsolutePath();
    }

    /** The dump of (default-group) rank {@code rank} in {@code dir}. */
    public static Path file(Path dir, int rank) {
        return dir.resolve(PREFIX + rank + SUFFIX);
    }

    /**
     * The dumps in {@code dir} last written at or after {@code sinceMillis} (epoch ms; 0 for all), by
     * file name; none when the folder does not exist.
     *
     * @throws IOException when the folder cannot be listed
     */
    public static List<Path> find(Path dir, long sinceMillis) throws IOException {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*" + SUFFIX)) {
            for (Path p : files) {
                if (Files.isRegularFile(p) && Files.getLastModifiedTime(p).toMillis() >= sinceMillis) {
                    out.add(p);
                }
            }
        }
        out.sort(null);
        return out;
    }

    /**
     * The identity of the job that wrote {@code dump}, the same for every rank of one job and
     * different between jobs; null for a dump that has none (written by an older ddp4j, or by a
     * rank whose store failed when its group started).
     */
    public static String job(JsonNode dump) {
        JsonNode id = dump.path(JOB_FIELD);
        return id.isTextual() && !id.asText().isEmpty() ? id.asText() : null;
    }

    /**
     * Reads one dump.
     *
     * @throws IOException naming the file and what is wrong with it (in printable text, whatever
     *     the file holds) when it cannot be read or is not a ddp4j flight-recorder dump
     */
    public static JsonNode read(Path file) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(file.toFile());
        } catch (JsonProcessingException e) {
            JsonLocation at = e.getLocation();
            throw new IOException(file + " is not a readable JSON file: " + printable(e.getOriginalMessage())
                    + (at != null && at.getLineNr() > 0 ? " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")" : ""),
                    e);
        } catch (IOException e) {
            throw new IOException(file + " cannot be read: " + printable(String.valueOf(e.getMessage())), e);
        }
        if (root == null || !root.path("version").asText().startsWith("ddp4j-flight-recorder-")
                || !root.has("rank") || !root.path("entries").isArray()) {
            throw new IOException(file + " is not a ddp4j flight-recorder dump (no version \"" + VERSION
                    + "\", rank and entries); pass the ddp4j-flight-recorder-rank*.json files the ranks wrote");
        }
        return root;
    }

    /**
     * {@code s} as one short line of printable ASCII: other characters (a binary file's bytes that
     * the parser quotes) become Java's four-digit unicode escapes, so a report never prints garbage.
     */
    private static String printable(String s) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < s.length() && out.length() < 200; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7f) {
                out.append(c);
            } else {
                out.append(String.format("\\u%04x", (int) c));
            }
        }
        return out.length() >= 200 ? out + "..." : out.toString();
    }
}
