package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.ddp4j.debug.FlightRecorderReport;
import org.ddp4j.spark.SparkRun;
import org.ddp4j.text.PrepareText;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every command's --help renders without a picocli warning: a bare {@code %} in a description is a
 * format specifier to picocli ({@code 30% of} printed three warnings in ConvNetDemo's help).
 */
class HelpTextTest {
    @Test
    void everyCommandsHelpRendersWithoutWarnings() {
        List<Object> commands = List.of(new ConvNetDemo(), new GPTDemo(), new LinearDemo(), new MnistDistributed(),
                new ResNetDemo(), new ResNetSynthetic(), new SparkConvNetTrain(), new SparkRun(),
                new PrepareText(), new FlightRecorderReport());
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            for (Object command : commands) {
                String usage = new CommandLine(command).getUsageMessage(CommandLine.Help.Ansi.OFF);
                assertTrue(usage.contains("Usage:"), usage);
            }
        } finally {
            System.setErr(err);
        }
        assertEquals("", captured.toString(StandardCharsets.UTF_8), "picocli's warnings while rendering --help");
    }
}
