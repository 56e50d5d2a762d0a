package org.ddp4j.nn;

import java.math.BigDecimal;

/** Numbers written as Python's {@code repr} writes them, so module strings match {@code print(model)}. */
final class ReprFormat {
    private ReprFormat() {}

    /**
     * A double as Python's {@code repr(float)}: the shortest digits that read back to the same
     * value, positional from 1e-4 up to 1e16 ({@code 0.1}, {@code 2.0}), scientific otherwise
     * with at least two exponent digits ({@code 1e-05}, {@code 1.5e+16}).
     */
    static String pythonFloat(double x) {
        if (Double.isNaN(x)) {
            return "nan";
        }
        if (Double.isInfinite(x)) {
            return x > 0 ? "inf" : "-inf";
        }
        if (x == 0) {
            return 1 / x < 0 ? "-0.0" : "0.0";
        }
        BigDecimal d = new BigDecimal(Double.toString(x)).stripTrailingZeros();
        String digits = d.unscaledValue().abs().toString();
        int exponent = digits.length() - 1 - d.scale(); // x = d.ddd * 10^exponent
        String sign = x < 0 ? "-" : "";
        if (exponent >= -4 && exponent < 16) {
            String plain = d.abs().toPlainString();
            return sign + (plain.contains(".") ? plain : plain + ".0");
        }
        String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + String.format("%02d", Math.abs(exponent));
    }
}
