#include "tasks/rational.h"

#include <limits>

namespace tensorscope::model_core::tasks {
namespace {

Int128 absolute(Int128 x) { return x < 0 ? -x : x; }

Int128 gcd128(Int128 a, Int128 b) {
  a = absolute(a);
  b = absolute(b);
  while (b != 0) {
    const Int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

bool fitsInt64(Int128 x) {
  return x >= std::numeric_limits<std::int64_t>::min() && x <= std::numeric_limits<std::int64_t>::max();
}

}  // namespace

Rational::Rational(std::int64_t n) : num_(n), den_(1) {}

Rational::Rational(std::int64_t n, std::int64_t d) {
  if (d == 0) throw std::domain_error("rational with a zero denominator");
  *this = reduce(n, d);
}

Rational Rational::reduce(Int128 n, Int128 d) {
  if (d == 0) throw std::domain_error("division by zero");
  if (d < 0) {
    n = -n;
    d = -d;
  }
  const Int128 g = gcd128(n, d);  // d > 0, so g >= 1
  n /= g;
  d /= g;
  if (!fitsInt64(n) || !fitsInt64(d)) throw RationalOverflow("rational result does not fit in int64");
  Rational r;
  r.num_ = static_cast<std::int64_t>(n);
  r.den_ = static_cast<std::int64_t>(d);
  return r;
}

std::string Rational::toString() const {
  std::string s = std::to_string(num_);
  if (den_ != 1) {
    s += '/';
    s += std::to_string(den_);
  }
  return s;
}

// Products of two int64 values fit in Int128 (|x| <= 2^126), and so do sums of two of them.
Rational operator+(const Rational& a, const Rational& b) {
  return Rational::reduce(static_cast<Int128>(a.num_) * b.den_ + static_cast<Int128>(b.num_) * a.den_,
                          static_cast<Int128>(a.den_) * b.den_);
}

Rational operator-(const Rational& a, const Rational& b) {
  return Rational::reduce(static_cast<Int128>(a.num_) * b.den_ - static_cast<Int128>(b.num_) * a.den_,
                          static_cast<Int128>(a.den_) * b.den_);
}

Rational operator*(const Rational& a, const Rational& b) {
  return Rational::reduce(static_cast<Int128>(a.num_) * b.num_, static_cast<Int128>(a.den_) * b.den_);
}

Rational operator/(const Rational& a, const Rational& b) {
  if (b.num_ == 0) throw std::domain_error("division by zero");
  return Rational::reduce(static_cast<Int128>(a.num_) * b.den_, static_cast<Int128>(a.den_) * b.num_);
}

Rational operator-(const Rational& a) { return Rational::reduce(-static_cast<Int128>(a.num_), a.den_); }

}  // namespace tensorscope::model_core::tasks
