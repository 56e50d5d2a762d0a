package org.ddp4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.Test;

/**
 * The flight record's layout is one contract on both sides of JNI: every constant of
 * native/src/comm/flight_record_layout.h ({@code kHeaderCapacity = 1}) has the same value in
 * {@link FlightRecordLayout} ({@code HEADER_CAPACITY}), and the Fingerprint kinds Java names match
 * fingerprint.h's.
 */
class FlightRecordLayoutTest {
    private static final Pattern CONSTANT = Pattern.compile("inline constexpr int k(\\w+) = (\\d+);");
    private static final Pattern KIND = Pattern.compile("\\bk(AllReduce|Broadcast|Reduce|ReduceScatter|Send|Recv) = (\\d+),");

    @Test
    void javaAndCppAgreeOnEveryPosition() throws IOException, ReflectiveOperationException {
        String header = Files.readString(RepoFiles.path("native/src/comm/flight_record_layout.h"));
        Map<String, Integer> cpp = new LinkedHashMap<>();
        Matcher m = CONSTANT.matcher(header);
        while (m.find()) {
            cpp.put(javaName(m.group(1)), Integer.parseInt(m.group(2)));
        }
        assertEquals(21, cpp.size(), "the header's constants: " + cpp);
        for (Map.Entry<String, Integer> e : cpp.entrySet()) {
            assertEquals(e.getValue(), FlightRecordLayout.class.getField(e.getKey()).getInt(null), e.getKey());
        }
        String fingerprint = Files.readString(RepoFiles.path("native/src/comm/fingerprint.h"));
        Matcher k = KIND.matcher(fingerprint);
        int kinds = 0;
        while (k.find()) {
            String name = "KIND_" + javaName(k.group(1));
            assertEquals(Integer.parseInt(k.group(2)), FlightRecordLayout.class.getField(name).getInt(null), name);
            kinds++;
        }
        assertEquals(6, kinds);
    }

    /** {@code HeaderLastStarted} as Java writes it: {@code HEADER_LAST_STARTED}; {@code RecordId}: {@code RECORD_ID}. */
    private static String javaName(String camel) {
        return camel.replaceAll("([a-z])([A-Z])", "$1_$2").replace("Ns", "_NS").replace("__", "_").toUpperCase();
    }
}
