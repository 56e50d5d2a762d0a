package org.ddp4j.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TokenFile: nanoGPT's uint16 little-endian layout byte for byte, memory-mapped reads, atomic writes, refusals. */
class TokenFileTest {
    @TempDir
    Path dir;

    @Test
    void writesNanoGptsLayoutAndReadsItBack() throws IOException {
        Path bin = dir.resolve("train.bin");
        int[] ids = {0, 1, 255, 256, 50256, 65535, 4660};
        TokenFile.write(bin, ids);
        // np.array(ids, dtype=np.uint16).tofile(path): little-endian, no header
        byte[] expected = {0, 0, 1, 0, (byte) 0xff, 0, 0, 1, 0x50, (byte) 0xc4, (byte) 0xff, (byte) 0xff, 0x34, 0x12};
        assertArrayEquals(expected, Files.readAllBytes(bin));
        TokenFile file = TokenFile.open(bin);
        assertEquals(ids.length, file.length());
        for (int i = 0; i < ids.length; i++) {
            assertEquals(ids[i], file.get(i));
        }
        long[] window = new long[3];
        file.copyTo(3, 3, window, 0);
        assertArrayEquals(new long[] {256, 50256, 65535}, window);
        assertThrows(IndexOutOfBoundsException.class, () -> file.get(ids.length));
        assertThrows(IndexOutOfBoundsException.class, () -> file.get(-1));
        assertThrows(IndexOutOfBoundsException.class, () -> file.copyTo(5, 3, window, 0));
    }

    @Test
    void replacesAtomicallyAndLeavesNoTemporaryFile() throws IOException {
        Path bin = dir.resolve("val.bin");
        TokenFile.write(bin, new int[] {1, 2, 3});
        TokenFile.write(bin, new int[] {7});
        assertEquals(1, TokenFile.open(bin).length());
        assertEquals(7, TokenFile.open(bin).get(0));
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(1, files.count(), "only val.bin: the temporary file was renamed");
        }
        TokenFile.write(bin, new int[0]);
        assertEquals(0, TokenFile.open(bin).length());
    }

    @Test
    void refusesIdsThatDoNotFitUint16BeforeWriting() {
        Path bin = dir.resolve("big.bin");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TokenFile.write(bin, new int[] {5, 65536}));
        assertTrue(e.getMessage().contains("65536") && e.getMessage().contains("position 1")
                && e.getMessage().contains("at most 65536 ids"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> TokenFile.write(bin, new int[] {-1}));
        assertFalse(Files.exists(bin));
    }

    @Test
    void refusesAFileOfOddSize() throws IOException {
        Path text = Files.writeString(dir.resolve("input.txt"), "abc");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TokenFile.open(text));
        assertTrue(e.getMessage().contains("3 bytes") && e.getMessage().contains("uint16"), e.getMessage());
    }
}
