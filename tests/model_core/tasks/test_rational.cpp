// Exact rational arithmetic of the arithmetic generator, against hand-computed values.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tasks/rational.h"

using tensorscope::model_core::tasks::Rational;
using tensorscope::model_core::tasks::RationalOverflow;

TEST(Rational, ReducesToLowestTermsWithPositiveDenominator) {
  const Rational a(6, -8);
  EXPECT_EQ(a.numerator(), -3);
  EXPECT_EQ(a.denominator(), 4);
  EXPECT_EQ(a.toString(), "-3/4");
  EXPECT_EQ(Rational(-6, -8).toString(), "3/4");
  EXPECT_EQ(Rational(0, -5).toString(), "0");
  EXPECT_EQ(Rational(0, -5).denominator(), 1);
  EXPECT_EQ(Rational(12, 4).toString(), "3");
  EXPECT_TRUE(Rational(12, 4).isInteger());
  EXPECT_EQ(Rational(-7).toString(), "-7");
  EXPECT_EQ(Rational(14, 21), Rational(2, 3));
}

TEST(Rational, FourOperationsAreExact) {
  EXPECT_EQ((Rational(1, 2) + Rational(1, 3)).toString(), "5/6");
  EXPECT_EQ((Rational(1, 6) + Rational(1, 3)).toString(), "1/2");
  EXPECT_EQ((Rational(1, 3) - Rational(1, 2)).toString(), "-1/6");
  EXPECT_EQ((Rational(-2, 9) * Rational(9, 4)).toString(), "-1/2");
  EXPECT_EQ((Rational(-2, 9) / Rational(4, 3)).toString(), "-1/6");
  // The example: (-2/9)/(4/3)*6 = -1.
  EXPECT_EQ((Rational(-2, 9) / Rational(4, 3) * Rational(6)).toString(), "-1");
  EXPECT_EQ((Rational(6) / Rational(-2, 3)).toString(), "-9");
  EXPECT_EQ((-Rational(-5, 7)).toString(), "5/7");
  EXPECT_EQ((Rational(3, 4) - Rational(3, 4)).toString(), "0");
}

TEST(Rational, DivisionByZeroThrows) {
  EXPECT_THROW(Rational(1, 0), std::domain_error);
  EXPECT_THROW(Rational(5) / Rational(0), std::domain_error);
  EXPECT_THROW(Rational(5) / (Rational(1, 3) - Rational(2, 6)), std::domain_error);
}

TEST(Rational, OverflowIsDetectedNotWrapped) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  EXPECT_THROW(Rational(big) + Rational(1), RationalOverflow);
  EXPECT_THROW(Rational(big) * Rational(2), RationalOverflow);
  EXPECT_THROW(Rational(1, big) * Rational(1, 3), RationalOverflow);  // denominator 3*(2^63-1)
  EXPECT_THROW(Rational(std::numeric_limits<std::int64_t>::min(), -1), RationalOverflow);
  EXPECT_THROW(-Rational(std::numeric_limits<std::int64_t>::min()), RationalOverflow);
  // Intermediates beyond int64 are fine when the reduced result fits.
  EXPECT_EQ((Rational(big, 2) + Rational(big, 2)).toString(), "9223372036854775807");
  EXPECT_EQ((Rational(big, 2) * Rational(2, big)).toString(), "1");
  EXPECT_EQ((Rational(big) - Rational(big)).toString(), "0");
}
