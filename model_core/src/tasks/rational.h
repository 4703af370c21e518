#pragma once
// Exact rational numbers for the arithmetic generator: int64 numerator and denominator kept in
// lowest terms with a positive denominator. Every operation computes in __int128 and throws
// RationalOverflow when the reduced result does not fit int64, so a generated answer is exact or
// the problem is rejected.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tensorscope::model_core::tasks {

/// The reduced result of an operation does not fit in int64.
class RationalOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

// __extension__ keeps -Wpedantic quiet about the GCC/Clang 128-bit integer.
__extension__ typedef __int128 Int128;

class Rational {
 public:
  Rational() = default;
  /// n/1.
  Rational(std::int64_t n);  // NOLINT(google-explicit-constructor): integers are rationals
  /// n/d reduced, sign on the numerator. Throws std::domain_error for d == 0 and
  /// RationalOverflow when the reduced value does not fit (e.g. INT64_MIN/-1).
  Rational(std::int64_t n, std::int64_t d);

  std::int64_t numerator() const { return num_; }
  std::int64_t denominator() const { return den_; }
  bool isInteger() const { return den_ == 1; }
  bool isZero() const { return num_ == 0; }
  bool isNegative() const { return num_ < 0; }

  /// "7", "-1", "-1/3", "7/2".
  std::string toString() const;

  friend Rational operator+(const Rational& a, const Rational& b);
  friend Rational operator-(const Rational& a, const Rational& b);
  friend Rational operator*(const Rational& a, const Rational& b);
  /// Throws std::domain_error when b is zero.
  friend Rational operator/(const Rational& a, const Rational& b);
  friend Rational operator-(const Rational& a);
  friend bool operator==(const Rational& a, const Rational& b) = default;

 private:
  static Rational reduce(Int128 n, Int128 d);
  std::int64_t num_ = 0;
  std::int64_t den_ = 1;
};

}  // namespace tensorscope::model_core::tasks
