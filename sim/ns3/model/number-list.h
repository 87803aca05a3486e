// SPDX-License-Identifier: MIT
/*
 * A queue disc attribute that lists numbers (DRR's quanta, PIAS's thresholds): the numbers
 * of a text, separated by white space.
 */
#ifndef CONFUCIUS_NUMBER_LIST_H
#define CONFUCIUS_NUMBER_LIST_H

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace ns3
{

/* The numbers in `text`; none if anything else is there. */
template <typename T>
std::optional<std::vector<T>>
ReadNumbers(const std::string& text)
{
    std::istringstream words(text);
    std::vector<T> numbers;
    for (T number; words >> number;)
        numbers.push_back(number);
    if (!words.eof())
        return std::nullopt;
    return numbers;
}

} // namespace ns3

#endif
