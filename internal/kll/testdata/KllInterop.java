// KllInterop answers KLL-sketch questions with Apache DataSketches' Java
// library (KllDoublesSketch, KllLongsSketch), for sketchd's
// interoperability tests (java_interop_test.go). It reads one request a
// line on stdin and answers one line, "ok ..." or "err <exception>".
//
// Requests (space-separated; lists are comma-separated 16-digit hex bit
// patterns, doubles as Double.doubleToRawLongBits, "-" for none):
//   build <double|long> <k> <values> <ranks> <values_at> <splits>
//   read  <double|long> <k> <hex>    <ranks> <values_at> <splits>
//   merge <double|long> <k> <hex,hex,...> <ranks> <values_at> <splits>
// Answer: ok <hex> <n> <retained> <estimation 0|1> <min> <max> <eps> <eps_pmf>
//   <quantiles incl> <quantiles excl> <quantile lower bounds> <quantile upper bounds>
//   <ranks incl> <ranks excl> <cdf incl> <cdf excl> <pmf incl> <pmf excl>
// (min, max and quantiles as items, the rest as doubles; "-" for an empty
// sketch's).
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.HexFormat;

import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.kll.KllLongsSketch;
import org.apache.datasketches.memory.Memory;
import org.apache.datasketches.quantilescommon.QuantileSearchCriteria;

public class KllInterop {
  static final QuantileSearchCriteria IN = QuantileSearchCriteria.INCLUSIVE;
  static final QuantileSearchCriteria EX = QuantileSearchCriteria.EXCLUSIVE;

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in), 1 << 20);
    PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 20), false);
    String line;
    while ((line = in.readLine()) != null) {
      String answer;
      try {
        answer = "ok " + answer(line.trim().split(" "));
      } catch (Exception e) {
        answer = "err " + e.toString().replace('\n', ' ');
      }
      out.println(answer);
      out.flush();
    }
  }

  static long[] bits(String s) {
    if (s.equals("-")) {
      return new long[0];
    }
    String[] p = s.split(",");
    long[] r = new long[p.length];
    for (int i = 0; i < p.length; i++) {
      r[i] = Long.parseUnsignedLong(p[i], 16);
    }
    return r;
  }

  static double[] doubles(String s) {
    long[] b = bits(s);
    double[] d = new double[b.length];
    for (int i = 0; i < b.length; i++) {
      d[i] = Double.longBitsToDouble(b[i]);
    }
    return d;
  }

  static String hexBits(long v) {
    return String.format("%016x", v);
  }

  static String list(double[] d) {
    if (d == null || d.length == 0) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < d.length; i++) {
      b.append(i > 0 ? "," : "").append(hexBits(Double.doubleToRawLongBits(d[i])));
    }
    return b.toString();
  }

  static String list(long[] v) {
    if (v == null || v.length == 0) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < v.length; i++) {
      b.append(i > 0 ? "," : "").append(hexBits(v[i]));
    }
    return b.toString();
  }

  static Memory mem(String hex) {
    return Memory.wrap(HexFormat.of().parseHex(hex));
  }

  static String answer(String[] t) {
    String op = t[0];
    int k = Integer.parseInt(t[2]);
    double[] ranks = doubles(t[4]);
    if (t[1].equals("double")) {
      KllDoublesSketch s;
      switch (op) {
        case "build":
          s = KllDoublesSketch.newHeapInstance(k);
          for (double v : doubles(t[3])) {
            s.update(v);
          }
          break;
        case "read":
          s = KllDoublesSketch.heapify(mem(t[3]));
          break;
        default:
          s = KllDoublesSketch.newHeapInstance(k);
          for (String h : t[3].split(",")) {
            s.merge(KllDoublesSketch.heapify(mem(h)));
          }
      }
      String head = HexFormat.of().formatHex(s.toByteArray()) + " " + s.getN() + " " + s.getNumRetained() + " "
          + (s.isEstimationMode() ? 1 : 0) + " ";
      if (s.isEmpty()) {
        return head + "- - - - - - - - - - - - - -";
      }
      double[] at = doubles(t[5]);
      double[] splits = doubles(t[6]);
      double[] lo = new double[ranks.length];
      double[] hi = new double[ranks.length];
      for (int i = 0; i < ranks.length; i++) {
        lo[i] = s.getQuantileLowerBound(ranks[i]);
        hi[i] = s.getQuantileUpperBound(ranks[i]);
      }
      return head + list(new double[] {s.getMinItem()}) + " " + list(new double[] {s.getMaxItem()}) + " "
          + list(new double[] {s.getNormalizedRankError(false)}) + " " + list(new double[] {s.getNormalizedRankError(true)}) + " "
          + list(s.getQuantiles(ranks, IN)) + " " + list(s.getQuantiles(ranks, EX)) + " " + list(lo) + " " + list(hi) + " "
          + list(s.getRanks(at, IN)) + " " + list(s.getRanks(at, EX)) + " "
          + (splits.length == 0 ? "- - - -" : list(s.getCDF(splits, IN)) + " " + list(s.getCDF(splits, EX)) + " "
              + list(s.getPMF(splits, IN)) + " " + list(s.getPMF(splits, EX)));
    }
    KllLongsSketch s;
    switch (op) {
      case "build":
        s = KllLongsSketch.newHeapInstance(k);
        for (long v : bits(t[3])) {
          s.update(v);
        }
        break;
      case "read":
        s = KllLongsSketch.heapify(mem(t[3]));
        break;
      default:
        s = KllLongsSketch.newHeapInstance(k);
        for (String h : t[3].split(",")) {
          s.merge(KllLongsSketch.heapify(mem(h)));
        }
    }
    String head = HexFormat.of().formatHex(s.toByteArray()) + " " + s.getN() + " " + s.getNumRetained() + " "
        + (s.isEstimationMode() ? 1 : 0) + " ";
    if (s.isEmpty()) {
      return head + "- - - - - - - - - - - - - -";
    }
    long[] at = bits(t[5]);
    long[] splits = bits(t[6]);
    long[] lo = new long[ranks.length];
    long[] hi = new long[ranks.length];
    for (int i = 0; i < ranks.length; i++) {
      lo[i] = s.getQuantileLowerBound(ranks[i]);
      hi[i] = s.getQuantileUpperBound(ranks[i]);
    }
    return head + list(new long[] {s.getMinItem()}) + " " + list(new long[] {s.getMaxItem()}) + " "
        + list(new double[] {s.getNormalizedRankError(false)}) + " " + list(new double[] {s.getNormalizedRankError(true)}) + " "
        + list(s.getQuantiles(ranks, IN)) + " " + list(s.getQuantiles(ranks, EX)) + " " + list(lo) + " " + list(hi) + " "
        + list(s.getRanks(at, IN)) + " " + list(s.getRanks(at, EX)) + " "
        + (splits.length == 0 ? "- - - -" : list(s.getCDF(splits, IN)) + " " + list(s.getCDF(splits, EX)) + " "
            + list(s.getPMF(splits, IN)) + " " + list(s.getPMF(splits, EX)));
  }
}
