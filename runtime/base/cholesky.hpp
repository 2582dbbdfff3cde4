// cholesky: the Cholesky factorization of a symmetric positive definite matrix in double, the one
// fit-draft's ridge regression and GPTQ's inverse factor share. Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <vector>

namespace fw {

/// a (n x n, row-major, symmetric; only the lower triangle is read) = L L^T: L is written over
/// the lower triangle, the diagonal included; the strict upper triangle is left as it was.
/// Returns -1, or the first row whose pivot is not positive (a is not positive definite; the
/// rows before it are factored).
int64_t cholesky_lower(std::vector<double>& a, int64_t n);

}  // namespace fw
